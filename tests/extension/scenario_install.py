# SPDX-License-Identifier: GPL-3.0-or-later
"""Install, enable, disable and enable again: nothing may be left behind.

Runs inside Blender through blender_driver.py (see test_install.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import bpy
from blender_helpers import (
    CLASS_NAMES,
    MODULE,
    OPERATORS,
    disable,
    empty_scene,
    enable,
    install,
    is_enabled,
    package,
    submodule,
)

_handles = []
_classes = []


def _registered_classes() -> list[str]:
    return [name for name in CLASS_NAMES if hasattr(bpy.types, name)]


def _our_handlers() -> list:
    return [h for h in bpy.app.handlers.load_pre if getattr(h, "__module__", "").startswith(MODULE)]


def _assert_registered() -> None:
    assert is_enabled()
    assert _registered_classes() == list(CLASS_NAMES), sorted(set(CLASS_NAMES) - set(_registered_classes()))
    assert "skin_audit" in bpy.types.Scene.bl_rna.properties
    classes = submodule("ui").CLASSES
    assert all(cls.is_registered for cls in classes)
    _classes[:] = classes
    assert len(_our_handlers()) == 1, _our_handlers()
    cli_command = submodule("blender_command")
    assert cli_command._handle is not None
    _handles.append(cli_command._handle)
    assert type(cli_command._handle).__name__ == "PyCapsule"


def _assert_nothing_left() -> None:
    assert not is_enabled()
    assert _registered_classes() == [], _registered_classes()
    assert _classes, "no classes were seen while enabled"
    assert [cls.__name__ for cls in _classes if cls.is_registered] == []
    assert [n for n in dir(bpy.types) if n.upper().startswith("SKIN_AUDIT")] == []
    assert "skin_audit" not in bpy.types.Scene.bl_rna.properties
    assert not hasattr(bpy.context.scene, "skin_audit")
    assert _our_handlers() == []
    for name in OPERATORS:
        try:
            getattr(bpy.ops.skin_audit, name).get_rna_type()
        except KeyError:
            continue
        raise AssertionError(f"operator skin_audit.{name} is still registered")
    # Blender itself must have dropped the command: removing it again is refused.
    assert _handles, "no command handle was seen while enabled"
    for handle in _handles:
        try:
            bpy.utils.unregister_cli_command(handle)
        except ValueError as exc:
            assert "already been removed" in str(exc)
        else:
            raise AssertionError("the skin_audit command was still registered with Blender")
    _handles.clear()


def setup() -> None:
    install()


def check_installed_into_temporary_user_resources() -> None:
    """The zip installs under BLENDER_USER_RESOURCES, never the real profile."""
    root = Path(os.environ["BLENDER_USER_RESOURCES"]).resolve()
    init = Path(package().__file__).resolve()
    assert init.is_relative_to(root), (init, root)
    assert (init.parent / "blender_manifest.toml").is_file()
    assert "skin_audit" not in sys.modules, "a checkout's skin_audit was imported instead of the extension"
    assert package().__package__ == MODULE


def check_enable_registers_everything() -> None:
    """Classes, the Scene property, the load handler and the CLI command are registered."""
    _assert_registered()
    assert bpy.context.scene.skin_audit.method == "LBS"


def check_every_operator_runs_or_explains() -> None:
    """Each operator either runs on the empty scene or says why it cannot."""
    empty_scene()
    assert bpy.ops.skin_audit.build_demo() == {"FINISHED"}
    for name in OPERATORS:
        op = getattr(bpy.ops.skin_audit, name)
        if not op.poll():
            try:
                op()
            except RuntimeError as exc:
                assert str(exc).strip().split("poll()", 1)[1].strip(), f"{name}: greyed out without a reason"
            else:
                raise AssertionError(f"{name} ran although its poll failed")
    assert bpy.ops.skin_audit.measure_twist() == {"FINISHED"}


def check_disable_leaves_nothing_registered() -> None:
    """Disabling removes classes, Scene.skin_audit, the handler and the command."""
    disable()
    _assert_nothing_left()


def check_enable_again_after_disable() -> None:
    """Enabling after a disable registers everything once more and the panel works."""
    enable()
    _assert_registered()
    empty_scene()
    assert bpy.ops.skin_audit.build_demo() == {"FINISHED"}


def check_enable_twice_registers_once() -> None:
    """Enabling an enabled extension changes nothing (no duplicate handler or command)."""
    enable()
    enable()
    _handles.clear()
    _assert_registered()


def check_repeated_cycles_leave_nothing() -> None:
    """Three disable/enable cycles, then a final disable: nothing is left."""
    for _ in range(3):
        disable()
        _assert_nothing_left()
        enable()
        _assert_registered()
    disable()
    _assert_nothing_left()
    enable()
    _handles.clear()


def check_results_are_dropped_when_a_file_loads() -> None:
    """The load handler forgets the panel's results: they belong to the previous file."""
    state = submodule("ui.state")
    empty_scene()
    bpy.ops.skin_audit.build_demo()
    bpy.ops.skin_audit.measure_twist()
    assert state.twist_readout(bpy.context.scene.name) is not None
    empty_scene()
    assert state.twist_readout(bpy.context.scene.name) is None


def check_cli_command_runs_the_cli() -> None:
    """The registered command's handler is the same CLI: its exit codes come back."""
    cli_command = submodule("blender_command")
    assert cli_command.COMMAND_ID == "skin_audit"
    assert cli_command.execute(["--version"]) == 0
    assert cli_command.execute(["verify", str(Path(os.environ["SKIN_AUDIT_TEST_WORK"]) / "missing.json")]) == 2
    assert cli_command.execute(["no-such-command"]) == 2


def check_cli_demo_writes_outputs() -> None:
    """``blender --command skin_audit demo --out DIR`` runs the experiment and writes its files."""
    out = Path(os.environ["SKIN_AUDIT_TEST_WORK"]) / "demo"
    out.mkdir(parents=True)
    execute = submodule("blender_command").execute
    assert execute(["demo", "--out", str(out), "--angles", "0,180", "--method", "lbs"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "twist_scene.json" in names, names
    assert execute(["verify", str(out / "twist_scene.json")]) == 0


def check_cli_demo_keeps_the_extension_enabled() -> None:
    """Running a command must not disable the extension (and the command) it runs from."""
    assert is_enabled(), "the demo command reset the preferences and disabled the extension"
    assert submodule("blender_command")._handle is not None
