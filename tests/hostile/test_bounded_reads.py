# SPDX-License-Identifier: GPL-3.0-or-later
"""The glTF reader reads only what is used, only regular files, never past byteLength; uris that
leave the asset's folder are reported; the reader's structure checks run before Blender's
importer; a FIFO as --config or as a buffer never hangs a run.

Every wait on a FIFO is bounded: ``bounded_files.fifo`` opens the writing end after a while, so
broken code fails the test instead of hanging it.  /dev/zero is read in a child process limited
to 2 GB of address space for the same reason.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skin_audit.core.gltf.checks import file_checks
from skin_audit.core.gltf.document import GltfError, load_gltf
from skin_audit.core.gltf.skin import inverse_bind_matrices, skinned_primitives
from tests.hostile.bounded_files import (
    fifo,
    with_draco,
    with_extra_buffer,
    with_inverse_binds_short,
    with_negative_key_times,
)
from tests.hostile.conftest import REPO, run_main

#: Address space the child reading /dev/zero may use: a reader that does not stop fails well below it.
CHILD_ADDRESS_SPACE = 2 << 30


def _codes(doc) -> dict[str, dict]:
    return {f.code: f for f in file_checks(doc)}


def _read_in_child(path: Path) -> subprocess.CompletedProcess:
    """load_gltf + skinned_primitives + file_checks in a child limited to CHILD_ADDRESS_SPACE."""
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({CHILD_ADDRESS_SPACE}, {CHILD_ADDRESS_SPACE}))
        from skin_audit.core.gltf.document import GltfError, load_gltf
        from skin_audit.core.gltf.checks import file_checks
        from skin_audit.core.gltf.skin import inverse_bind_matrices, skinned_primitives
        try:
            doc = load_gltf({str(path)!r})
            skinned_primitives(doc)
            print(sorted(f.code for f in file_checks(doc)), doc.buffers.loaded)
        except GltfError as exc:
            print("GltfError", exc)
    """)
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)


# ----------------------------------------------------------------- the reader (no Blender)


def test_an_unused_buffer_naming_a_fifo_is_never_opened(tmp_path):
    with fifo(tmp_path / "pipe.bin"):
        doc = load_gltf(with_extra_buffer(tmp_path / "a.gltf", "pipe.bin"))
        assert len(skinned_primitives(doc)) == 1
        file_checks(doc)
        assert doc.buffers.loaded == (0,)  # buffer 1 was never read


def test_an_unused_buffer_naming_dev_zero_is_never_read_and_is_reported(tmp_path):
    done = _read_in_child(with_extra_buffer(tmp_path / "a.gltf", "/dev/zero"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gltf-uri-outside-folder" in done.stdout and done.stdout.rstrip().endswith("(0,)"), done.stdout


@pytest.mark.parametrize("uri, kind", [("/dev/zero", "a character device"), ("pipe.bin", "a FIFO"),
                                       (".", "a folder")])
def test_a_used_buffer_that_is_no_regular_file_is_refused_by_name(tmp_path, uri, kind):
    path = with_extra_buffer(tmp_path / "a.gltf", uri, used=True)
    with fifo(tmp_path / "pipe.bin"):
        done = _read_in_child(path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("GltfError a.gltf: buffer 1:"), done.stdout
    assert f"is not a regular file ({kind})" in done.stdout


def test_uris_that_leave_the_folder_are_read_and_reported(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "zeros.bin").write_bytes(bytes(48))
    asset = tmp_path / "asset"
    asset.mkdir()
    climbing = load_gltf(with_extra_buffer(asset / "up.gltf", "../outside/zeros.bin", used=True))
    absolute = load_gltf(with_extra_buffer(asset / "abs.gltf", str(outside / "zeros.bin"), used=True))
    inside = load_gltf(with_extra_buffer(asset / "in.gltf", "sub/../zeros.bin"))
    for doc, code in ((climbing, None), (absolute, "NON_RELATIVE_URI")):
        (prim,) = skinned_primitives(doc)
        assert prim.morph_positions[0].tolist() == [[0.0] * 3] * 4  # read from outside, as the file says
        finding = _codes(doc)["gltf-uri-outside-folder"]
        assert finding.severity == "WARNING" and finding.count == 1
        assert finding.details["uris"] == [{"kind": "buffers", "index": 1, "uri": doc.json["buffers"][1]["uri"],
                                            "validator_code": code}]
        assert finding.details["validator_count"] == (code is not None)
    assert "gltf-uri-outside-folder" not in _codes(inside)


def test_a_buffer_is_read_no_further_than_its_byte_length(tmp_path):
    (tmp_path / "big.bin").write_bytes(bytes(48) + b"\xff" * (1 << 20))
    doc = load_gltf(with_extra_buffer(tmp_path / "a.gltf", "big.bin", used=True))
    skinned_primitives(doc)
    assert len(doc.buffers[1]) == 48


def test_negative_animation_key_times_are_an_error_finding(tmp_path):
    doc = load_gltf(with_negative_key_times(tmp_path / "a.gltf", (-0.5, -0.25, 0.0, 1.0)))
    finding = _codes(doc)["gltf-animation-time-negative"]
    assert finding.severity == "ERROR" and finding.vertices == (0, 1)
    assert finding.details["validator_code"] == "ACCESSOR_ANIMATION_INPUT_NEGATIVE"
    assert finding.details["first_time"] == -0.5
    assert "gltf-animation-time-negative" not in _codes(load_gltf(with_negative_key_times(tmp_path / "b.gltf",
                                                                                       (0.0, 1.0))))


# ----------------------------------------------------------------- with Blender


def _draco_decodes(payload: bytes) -> bool:
    """Blender's own Draco decoder (the library its glTF importer loads) on ``payload``."""
    from io_scene_gltf2.io.com.draco import dll_path  # the importer's own lookup

    dll = ctypes.cdll.LoadLibrary(str(dll_path().resolve()))
    dll.decoderCreate.restype = ctypes.c_void_p
    dll.decoderRelease.argtypes = [ctypes.c_void_p]
    dll.decoderDecode.restype = ctypes.c_bool
    dll.decoderDecode.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    decoder = dll.decoderCreate()
    try:
        return bool(dll.decoderDecode(decoder, payload, len(payload)))
    finally:
        dll.decoderRelease(decoder)


def _blender_draco_payload(bpy, tmp_path: Path) -> bytes:
    """The Draco bytes Blender's exporter writes for the quad (a decodable stream)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.gltf(filepath=str(with_negative_key_times(tmp_path / "src.gltf", (0.0, 1.0))))
    out = tmp_path / "draco.glb"
    bpy.ops.export_scene.gltf(filepath=str(out), export_format="GLB", export_draco_mesh_compression_enable=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    raw = out.read_bytes()
    if b"DRACO" not in raw:
        pytest.skip(f"Blender {bpy.app.version_string}'s glTF exporter wrote no Draco data (no Draco library)")
    start = raw.index(b"DRACO")
    doc = json.loads(raw[20:20 + int.from_bytes(raw[12:16], "little")])
    ext = doc["meshes"][0]["primitives"][0]["extensions"]["KHR_draco_mesh_compression"]
    view = doc["bufferViews"][ext["bufferView"]]
    return raw[start:start + view["byteLength"]]


@pytest.mark.blender
def test_draco_data_is_reported_exactly_when_blenders_draco_decoder_refuses_it(bpy, tmp_path):
    good = _blender_draco_payload(bpy, tmp_path)
    cases = {"good": good, "garbage": b"NOTDRACO" * 8, "point_cloud": good[:7] + b"\x00" + good[8:],
             "future_version": good[:5] + b"\x09\x00" + good[7:], "header_only": good[:4]}
    for name, payload in cases.items():
        doc = load_gltf(with_draco(tmp_path / f"{name}.gltf", payload))
        reported = "gltf-draco-undecodable" in _codes(doc)
        assert reported == (not _draco_decodes(payload)), name
        assert len(skinned_primitives(doc)) == 1  # the fallback is what the audit reads
    assert not _codes(load_gltf(tmp_path / "good.gltf")).get("gltf-draco-undecodable")
    finding = _codes(load_gltf(tmp_path / "garbage.gltf"))["gltf-draco-undecodable"]
    assert finding.severity == "ERROR" and "does not start with a Draco header" in finding.message


@pytest.mark.blender
def test_the_readers_checks_run_before_blenders_importer(bpy, empty_scene, tmp_path):
    from skin_audit.blender.run.audit_files import audit_file
    from skin_audit.core.audit.options import AuditOptions

    path = with_inverse_binds_short(tmp_path / "chain.gltf", 60)
    with pytest.raises(GltfError, match="has 59 matrices for 60 joints"):
        inverse_bind_matrices(load_gltf(path), 0)  # what the reader refuses, in a moment
    result = audit_file(path, AuditOptions())
    assert result.status == "error" and "has 59 matrices for 60 joints" in (result.message or ""), result
    assert len(bpy.data.objects) == 0  # the importer never ran


@pytest.mark.blender
def test_a_single_file_run_with_an_unused_fifo_buffer_completes(bpy, empty_scene, tmp_path):
    with fifo(tmp_path / "pipe.bin"):
        path = with_extra_buffer(tmp_path / "a.gltf", "pipe.bin")
        code, out, err = run_main("audit", path, "--no-shape-checks", "--json", tmp_path / "r.json")
    assert code in (0, 1), err
    (entry,) = json.loads((tmp_path / "r.json").read_text())["files"]
    assert entry["status"] == "ok", entry


@pytest.mark.blender
def test_a_used_fifo_buffer_is_refused_before_the_importer_opens_it(bpy, empty_scene, tmp_path):
    with fifo(tmp_path / "pipe.bin"):
        path = with_extra_buffer(tmp_path / "a.gltf", "pipe.bin", used=True)
        code, out, err = run_main("audit", path, "--no-shape-checks")
    assert code == 2, err
    assert "buffer 1" in out + err and "not a regular file" in out + err
    assert len(bpy.data.objects) == 0


@pytest.mark.blender
def test_a_fifo_as_the_input_or_the_config_is_refused_without_waiting(bpy, empty_scene, tmp_path):
    with fifo(tmp_path / "rig.glb"):
        code, out, err = run_main("audit", tmp_path / "rig.glb", "--no-shape-checks")
    assert code == 2 and "not a regular file" in out + err, (code, out, err)
    good = with_negative_key_times(tmp_path / "a.gltf", (0.0, 1.0))
    with fifo(tmp_path / "skin_audit.toml"):
        code, out, err = run_main("audit", good, "--config", tmp_path / "skin_audit.toml")
    assert code == 2 and "--config" in err and "not a regular file" in err, (code, out, err)


@pytest.mark.parametrize("children, cycle", [
    ({0: [0]}, {0}), ({0: [1], 1: [0]}, {0, 1}), ({0: [1], 1: [2], 2: [0], 3: [4]}, {0, 1, 2}),
    ({1: [2], 2: [3], 3: [1], 0: [4]}, {1, 2, 3}),
])
def test_a_cycle_of_children_is_refused_naming_a_node_on_it(tmp_path, children, cycle):
    from skin_audit.core.gltf.scene import node_parents

    with pytest.raises(GltfError, match="is in a cycle of children") as caught:
        node_parents(_doc_with_nodes(tmp_path, 5, children))
    assert int(str(caught.value).split(": node ")[1].split(":")[0]) in cycle


def test_a_long_chain_of_joints_is_read_as_a_tree(tmp_path):
    from skin_audit.core.gltf.scene import node_parents

    n = 10_000
    doc = _doc_with_nodes(tmp_path, n, {i: [i + 1] for i in range(n - 1)})
    assert node_parents(doc).tolist() == [-1, *range(n - 1)]


def _doc_with_nodes(tmp_path: Path, count: int, children: dict[int, list[int]]):
    nodes = [{"children": children[i]} if i in children else {} for i in range(count)]
    path = tmp_path / "nodes.gltf"
    path.write_text(json.dumps({"asset": {"version": "2.0"}, "nodes": nodes}), encoding="utf-8")
    return load_gltf(path)
