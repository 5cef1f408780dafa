# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers for the scenarios that run inside Blender (imported there only).

``LayoutRecorder`` stands in for the ``UILayout`` that Blender hands a panel's
``draw()``; there is no UI region in background mode.  It fakes only the sink:
it records what the panel asks for and checks every request against Blender's
own RNA (icon names, operator ids and their properties, property names), so a
typo in a panel fails here as it would in the UI.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import addon_utils
import bpy

ZIP = os.environ.get("SKIN_AUDIT_TEST_ZIP", "")
WORK = Path(os.environ.get("SKIN_AUDIT_TEST_WORK", "."))
REPO = "user_default"
MODULE = f"bl_ext.{REPO}.skin_audit"

#: Operators and panels, as Blender exposes them in ``bpy.types``.
CLASS_NAMES = (
    "SKIN_AUDIT_OT_build_demo",
    "SKIN_AUDIT_OT_measure_twist",
    "SKIN_AUDIT_OT_run_audit",
    "SKIN_AUDIT_OT_select_finding",
    "SKIN_AUDIT_OT_show_test_pose",
    "SKIN_AUDIT_OT_show_heatmap",
    "SKIN_AUDIT_OT_clear_heatmap",
    "SKIN_AUDIT_OT_export_report",
    "SKIN_AUDIT_PT_main",
    "SKIN_AUDIT_PT_twist",
    "SKIN_AUDIT_PT_audit",
    "SKIN_AUDIT_PT_findings",
)
OPERATORS = tuple(n.split("_OT_")[1] for n in CLASS_NAMES if "_OT_" in n)
ICONS = frozenset(bpy.types.UILayout.bl_rna.functions["label"].parameters["icon"].enum_items.keys())


def install() -> None:
    """Install the zip into the temporary user resources and enable it."""
    assert ZIP and Path(ZIP).is_file(), f"no extension zip at {ZIP!r}"
    result = bpy.ops.extensions.package_install_files(filepath=ZIP, repo=REPO, enable_on_install=True)
    assert result == {"FINISHED"}, result
    # A bad zip still returns FINISHED: check that it really is enabled.
    assert is_enabled(), f"{MODULE} is not enabled after installing {ZIP}"


def is_enabled() -> bool:
    return MODULE in bpy.context.preferences.addons


def enable() -> None:
    addon_utils.enable(MODULE, default_set=True, handle_error=None)
    assert is_enabled()


def disable() -> None:
    addon_utils.disable(MODULE, default_set=True)
    assert not is_enabled()


def package():
    """The installed package module (the extension, never a checkout)."""
    return sys.modules[MODULE]


def submodule(name: str):
    return sys.modules[f"{MODULE}.{name}"]


def empty_scene() -> None:
    """An empty factory scene; unlike read_factory_settings, this keeps preferences and the extension."""
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    assert is_enabled()


def poll_message(operator) -> str:
    """Why ``operator`` is greyed out: its poll must fail, and the message is Blender's own."""
    assert not operator.poll(), f"{operator.idname_py()} is unexpectedly available"
    try:
        operator()
    except RuntimeError as exc:
        return str(exc)
    raise AssertionError(f"{operator.idname_py()} ran although its poll failed")


def settings():
    return bpy.context.scene.skin_audit


# Drawing ----------------------------------------------------------------------


class OperatorProps:
    """The properties object ``layout.operator()`` returns; only real properties can be set."""

    def __init__(self, idname: str):
        category, name = idname.split(".")
        rna = getattr(getattr(bpy.ops, category), name).get_rna_type()  # KeyError if unregistered
        object.__setattr__(self, "_names", set(rna.properties.keys()))
        object.__setattr__(self, "values", {})

    def __setattr__(self, name, value):
        assert name in self._names, f"operator has no property {name!r}"
        self.values[name] = value


class LayoutRecorder:
    """Records a panel's layout calls into ``items`` (shared with its sub-layouts)."""

    _FLAGS = {"enabled", "active", "alert", "use_property_split", "use_property_decorate", "scale_x",
              "scale_y", "alignment", "emboss", "operator_context"}

    def __init__(self, items: list | None = None, path: tuple[str, ...] = ()):
        object.__setattr__(self, "items", [] if items is None else items)
        object.__setattr__(self, "path", path)

    def __setattr__(self, name, value):
        assert name in self._FLAGS, f"UILayout has no settable {name!r} in this recorder"
        self.items.append({"kind": "flag", "path": self.path, "name": name, "value": value})

    def _child(self, kind: str) -> LayoutRecorder:
        self.items.append({"kind": kind, "path": self.path})
        return LayoutRecorder(self.items, self.path + (kind,))

    def row(self, **_kw):
        return self._child("row")

    def column(self, **_kw):
        return self._child("column")

    def box(self):
        return self._child("box")

    def split(self, **_kw):
        return self._child("split")

    def separator(self, **_kw):
        self.items.append({"kind": "separator", "path": self.path})

    def _icon(self, icon: str) -> str:
        assert icon in ICONS, f"unknown icon {icon!r}"
        return icon

    def label(self, *, text: str = "", icon: str = "NONE"):
        self.items.append({"kind": "label", "path": self.path, "text": text, "icon": self._icon(icon)})

    def operator(self, idname: str, *, text: str | None = None, icon: str = "NONE", **_kw):
        props = OperatorProps(idname)
        self.items.append({"kind": "operator", "path": self.path, "idname": idname, "text": text,
                           "icon": self._icon(icon), "props": props.values})
        return props

    def operator_menu_enum(self, idname: str, property: str, *, text: str | None = None, icon: str = "NONE"):
        props = OperatorProps(idname)
        assert property in props._names, f"{idname} has no property {property!r}"
        self.items.append({"kind": "operator_menu_enum", "path": self.path, "idname": idname,
                           "property": property, "text": text, "icon": self._icon(icon)})

    def prop(self, data, property: str, **kw):
        assert property in data.bl_rna.properties, f"{data!r} has no property {property!r}"
        self.items.append({"kind": "prop", "path": self.path, "data": data, "property": property, **kw})

    # Queries used by the checks.

    def of(self, kind: str) -> list[dict]:
        return [i for i in self.items if i["kind"] == kind]

    def texts(self) -> list[str]:
        return [i["text"] for i in self.of("label")]

    def operators(self) -> list[str]:
        return [i["idname"] for i in self.of("operator") + self.of("operator_menu_enum")]

    def props(self) -> list[str]:
        return [i["property"] for i in self.of("prop")]

    def has_text(self, fragment: str) -> bool:
        return any(fragment in t for t in self.texts())


def draw(panel_name: str, context=None) -> LayoutRecorder:
    """Run a registered panel's ``draw()`` against a recorder; return the recorder."""
    panel = getattr(bpy.types, panel_name)
    context = context or bpy.context
    assert panel.poll(context), f"{panel_name}.poll() is False here"
    layout = LayoutRecorder()
    stand_in = type("PanelStandIn", (), {"layout": layout})()
    panel.draw(stand_in, context)
    return layout


def draw_finding_popup(mesh_index: int, rig_index: int, finding_index: int, context=None) -> LayoutRecorder:
    """Run the finding-text popup's ``draw()`` (what its text button opens) against a recorder."""
    layout = LayoutRecorder()
    stand_in = type("PopupStandIn", (), {"layout": layout, "mesh_index": mesh_index, "rig_index": rig_index,
                                         "finding_index": finding_index})()
    bpy.types.SKIN_AUDIT_OT_finding_text.draw(stand_in, context or bpy.context)
    return layout


def popup_operators(panel: LayoutRecorder, idname: str) -> list[dict]:
    """The ``idname`` buttons of every finding's popup opened from ``panel``: their properties."""
    found = []
    for item in panel.of("operator"):
        if item["idname"] == "skin_audit.finding_text":
            p = item["props"]
            popup = draw_finding_popup(p["mesh_index"], p["rig_index"], p["finding_index"])
            found += [i["props"] for i in popup.of("operator") if i["idname"] == idname]
    return found
