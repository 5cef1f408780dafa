# SPDX-License-Identifier: GPL-3.0-or-later
"""Bad usage is exit 2 and never an internal error; a failed report set keeps the earlier reports;
names from a file never drive the terminal; a gate that audits nothing does not pass.

The command line runs in this process (``cli.main``); every rig and file is built in code.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from tests.hostile.conftest import files_by_name, fill_disk, run_main, strict_report

pytestmark = [pytest.mark.blender, pytest.mark.blender42]


def _no_internal(code: int, err: str) -> None:
    assert code == 2, err
    assert "internal error" not in err and "Traceback" not in err, err


# 5. A report set that fails in one folder leaves the earlier reports of every folder byte for byte.

def test_a_report_set_failing_on_a_full_disk_keeps_the_earlier_report(hostile, small_disk, tmp_path, empty_scene):
    earlier = tmp_path / "A"
    earlier.mkdir()
    (earlier / "audit.json").write_bytes(b'{"earlier": "run"}\n')
    fill_disk(small_disk)
    code, out, err = run_main("audit", hostile / "good.blend", "--json", earlier / "audit.json", "--sarif",
                              small_disk / "x.sarif")
    _no_internal(code, out + err)
    assert "No space left on device" in err
    assert (earlier / "audit.json").read_bytes() == b'{"earlier": "run"}\n'
    assert sorted(p.name for p in earlier.iterdir()) == ["audit.json"]
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]  # no staging left


# 9. Bad usage is exit 2, never 3.

@pytest.mark.parametrize("frame", ["99999999999999999999", "-2147483649", "1e3"])
def test_a_frame_that_is_no_frame_number_is_bad_usage(hostile, empty_scene, capsys, frame):
    code, out, err = run_main("audit", hostile / "good.blend", f"--frame={frame}")
    err += capsys.readouterr().err  # argparse's own usage error
    _no_internal(code, out + err)
    assert "--frame" in err


def test_a_frame_beyond_blenders_is_reported_as_the_frame_blender_used(bpy, hostile, empty_scene, tmp_path):
    target = tmp_path / "r.json"
    code, out, err = run_main("audit", hostile / "good.blend", "--frame", "2147483647", "--json", target)
    assert code == 0, out + err
    # Blender's own clamp, measured on this Blender: the report says what it audited.
    bpy.context.scene.frame_set(2147483647)
    assert strict_report(target)["options"]["frame"] == bpy.context.scene.frame_current == 1048574


def _garbage_server(stop: threading.Event) -> tuple[socket.socket, threading.Thread]:
    """A port on 127.0.0.1 that answers every connection with bytes that are not Dask's, then closes,
    until ``stop`` is set."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)

    def serve() -> None:
        for _ in range(3000):  # bounded: 10 minutes at most
            if stop.is_set():
                return
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                try:
                    conn.sendall(b"\xffgarbage" * 4096)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


def test_a_malformed_scheduler_address_is_bad_usage(hostile, empty_scene, capsys):
    pytest.importorskip("distributed")
    code, out, err = run_main("audit", hostile / "good.blend", "--scheduler", "http://[::1")
    _no_internal(code, out + err)
    assert code == 2
    assert "http://[::1" in err + capsys.readouterr().err  # (argparse's own usage error, on sys.stderr)


def test_a_scheduler_port_that_answers_garbage_is_bad_usage(hostile, empty_scene):
    pytest.importorskip("distributed")
    stop = threading.Event()
    server, thread = _garbage_server(stop)
    try:
        port = server.getsockname()[1]
        code, out, err = run_main("audit", hostile / "good.blend", "--scheduler", f"tcp://127.0.0.1:{port}")
    finally:
        stop.set()
        thread.join(timeout=60)
        server.close()
    _no_internal(code, out + err)
    assert "cannot reach the Dask scheduler" in err or "does not speak Dask's protocol" in err


def test_a_config_nested_100000_deep_is_bad_usage(hostile, empty_scene, tmp_path):
    config = tmp_path / "deep.toml"
    config.write_text("x = " + "[" * 100_000 + "1" + "]" * 100_000 + "\n", encoding="utf-8")
    code, out, err = run_main("audit", hostile / "good.blend", "--config", config)
    _no_internal(code, out + err)
    assert "deep.toml" in err and "nested too deeply" in err


def _rig_named(bpy, path: Path, mesh_name: str, group_name: str = "") -> Path:
    """The chain rig with its mesh renamed (and a vertex group naming no bone), saved uncompressed."""
    from tests.factories.blender_rigs import chain_rig

    bpy.ops.wm.read_factory_settings(use_empty=True)
    mesh, _ = chain_rig("Good")
    mesh.name = mesh_name
    if group_name:
        mesh.vertex_groups.new(name=group_name).add([0], 0.5, "REPLACE")
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True, compress=False)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return path


def test_a_blend_with_an_object_name_that_is_not_utf8_is_audited_and_shown_escaped(bpy, empty_scene, tmp_path):
    # Blender stores names as bytes; bpy raised UnicodeDecodeError on every read of this one (exit 3).
    path = _rig_named(bpy, tmp_path / "bad_name.blend", "BodyQQQQ")
    data = path.read_bytes()
    assert data.count(b"OBBodyQQQQ\0") == 1
    path.write_bytes(data.replace(b"OBBodyQQQQ\0", b"OBBody\xff\xfeQQ\0"))
    target = tmp_path / "r.json"
    code, out, err = run_main("audit", path, "--no-shape-checks", "--json", target)
    assert code == 0, out + err
    entry = files_by_name(strict_report(target))["bad_name.blend"]
    assert entry["status"] == "ok"
    assert [m["object"] for m in entry["meshes"]] == ["Body\\xff\\xfeQQ"]
    assert "Body\\xff\\xfeQQ <- Good_Armature" in out


# 10. Names never drive the terminal: control characters are shown escaped in every text output.

EVIL = "Evil\x1b[2J\n[ERROR] forged\u202e"


def test_control_characters_in_names_print_escaped(bpy, empty_scene, tmp_path):
    path = _rig_named(bpy, tmp_path / "evil.blend", EVIL, group_name="Ghost\x1b]0;owned\x07")
    code, out, err = run_main("audit", path, "--no-shape-checks", "--json", tmp_path / "r.json")
    assert code in (0, 1), out + err
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert not any(line.startswith("[ERROR] forged") for line in out.splitlines())
    assert "Evil\\x1b[2J\\n[ERROR] forged\\u202e" in out
    assert "Ghost\\x1b]0;owned\\x07" in out  # in the group-without-bone finding's message
    # The JSON keeps the name as it is (strict JSON escapes it); only text for people is escaped.
    report = strict_report(tmp_path / "r.json")
    assert files_by_name(report)["evil.blend"]["meshes"][0]["object"] == EVIL


def test_control_characters_in_an_error_and_a_fix_summary_print_escaped(bpy, empty_scene, tmp_path):
    missing = tmp_path / "no\x1b[31mfile.blend"
    code, out, err = run_main("fix", missing, "--code", "weights-not-normalized", "--in-place")
    assert code == 2 and "\x1b" not in err and "no\\x1b[31mfile.blend" in err, err
    path = _rig_named(bpy, tmp_path / "evil.blend", EVIL, group_name="Ghost\n[ERROR] x")
    code, out, err = run_main("fix", path, "--code", "group-without-bone", "--in-place")
    assert code == 0, out + err
    assert "\x1b" not in out and "\u202e" not in out
    assert not any(line.startswith("[ERROR]") for line in out.splitlines()), out
    assert "removed group 'Ghost\\n[ERROR] x'" in out


def test_printable_escapes_controls_and_keeps_every_other_name():
    from skin_audit.core.text import printable

    assert printable("Bone.L") == "Bone.L"
    assert printable("骨_левый ü") == "骨_левый ü"  # names in any script are kept
    assert printable("C:\\rigs\\a.blend") == "C:\\rigs\\a.blend"  # backslashes kept
    assert printable("a\x1b[2Jb\n\r\t\x00\x7f\x9b") == "a\\x1b[2Jb\\n\\r\\t\\x00\\x7f\\x9b"
    assert printable("x\u202ey\u2028z") == "x\\u202ey\\u2028z"
    assert printable(b"Body\xff".decode("utf-8", "surrogateescape")) == "Body\\xff"


# 12. A config that skips every file given audits nothing: exit 2, like a folder without rigs.

@pytest.mark.parametrize("given", ["file", "folder"])
def test_a_config_skipping_every_file_is_exit_2(hostile, empty_scene, tmp_path, given):
    (hostile / "skin_audit.toml").write_text('[paths]\nskip = ["**"]\n', encoding="utf-8")
    path = hostile / "good.blend" if given == "file" else hostile / "lib"
    target = tmp_path / "r.json"
    code, out, err = run_main("audit", path, "--config", hostile / "skin_audit.toml", "--json", target)
    _no_internal(code, out + err)
    report = strict_report(target)
    (entry,) = report["files"]
    assert entry["status"] == "error" and "nothing audited" in entry["message"] and "'**'" in entry["message"]
    assert report["summary"]["files_with_errors"] == 1
