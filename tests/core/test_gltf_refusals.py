# SPDX-License-Identifier: GPL-3.0-or-later
"""The glTF reader refuses malformed skins and accessors cleanly: a ``GltfError`` (an input
error: exit 2 on the command line) naming the file, the object and the problem, never a crash.

Each case breaks one field of a tiny skinned file built here (tests/core/test_gltf_reader.py:
node 0 skinned by joints nodes 1 and 2; accessors 0 POSITION, 1 JOINTS_0, 2 WEIGHTS_0,
3 inverseBindMatrices) and reads it the way the audit does before Blender's importer runs
(``check_before_import``); tests/hostile/test_gltf_refusals_cli.py runs a few through the
command line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skin_audit.core.errors import InputError
from skin_audit.core.gltf.checks import check_before_import
from skin_audit.core.gltf.document import GltfError, load_gltf
from tests.core.test_gltf_reader import Tiny, _skinned

PRIM = "mesh 0 primitive 0"

Edit = Callable[[dict[str, Any]], object]


def _attrs(j: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = j["meshes"][0]["primitives"][0]["attributes"]
    return attrs


#: name -> (edit of the JSON, how the message goes on after the file's name).
CASES: dict[str, tuple[Edit, str]] = {
    # JOINTS and WEIGHTS accessors: type and component type (3.7.3.1).
    "joints VEC3": (lambda j: j["accessors"][1].update(type="VEC3"),
                    f"accessor 1 ({PRIM} JOINTS_0): must be VEC4 UNSIGNED_BYTE or UNSIGNED_SHORT"),
    "joints FLOAT": (lambda j: j["accessors"][1].update(componentType=5126),
                     f"accessor 1 ({PRIM} JOINTS_0): must be VEC4 UNSIGNED_BYTE or UNSIGNED_SHORT"),
    "joints UNSIGNED_INT": (lambda j: j["accessors"][1].update(componentType=5125),
                            f"accessor 1 ({PRIM} JOINTS_0): must be VEC4 UNSIGNED_BYTE or UNSIGNED_SHORT"),
    "weights VEC3": (lambda j: j["accessors"][2].update(type="VEC3"),
                     f"accessor 2 ({PRIM} WEIGHTS_0): must be VEC4 FLOAT or normalised UNSIGNED_BYTE/SHORT"),
    "weights signed BYTE": (lambda j: j["accessors"][2].update(componentType=5120, normalized=True),
                            f"accessor 2 ({PRIM} WEIGHTS_0): must be VEC4 FLOAT or normalised"),
    "weights bytes not normalized": (lambda j: j["accessors"][2].update(componentType=5121),
                                     f"accessor 2 ({PRIM} WEIGHTS_0): integer weights must have normalized: true"),
    # Counts.
    "joints count 1 for 2 vertices": (lambda j: j["accessors"][1].update(count=1),
                                      f"{PRIM}: JOINTS_0/WEIGHTS_0 have 1/2 elements for 2 vertices"),
    "weights count 1 for 2 vertices": (lambda j: j["accessors"][2].update(count=1),
                                       f"{PRIM}: JOINTS_0/WEIGHTS_0 have 2/1 elements for 2 vertices"),
    "joints count past its view": (lambda j: j["accessors"][1].update(count=3),
                                   f"accessor 1 ({PRIM} JOINTS_0): 3 elements of 4 bytes (stride 4) from byte 0 "
                                   "run past the end of bufferView 1 (8 bytes)"),
    "count a string": (lambda j: j["accessors"][1].update(count="2"),
                       "accessor 1: count '2' is not a non-negative"),
    "count negative": (lambda j: j["accessors"][1].update(count=-1), "accessor 1: count -1 is not a non-negative"),
    "count true": (lambda j: j["accessors"][1].update(count=True), "accessor 1: count True is not a non-negative"),
    "componentType a string": (lambda j: j["accessors"][1].update(componentType="5121"),
                               "accessor 1: componentType '5121' is not one of [5120"),
    "type unknown": (lambda j: j["accessors"][1].update(type="VEC5"), "accessor 1: type 'VEC5' is not one of"),
    # Indices: accessors, skins, nodes, buffer views, sparse.
    "JOINTS_0 past the accessors": (lambda j: _attrs(j).update(JOINTS_0=99),
                                    f"{PRIM} JOINTS_0: refers to accessors 99, but the file has 4"),
    "JOINTS_0 negative": (lambda j: _attrs(j).update(JOINTS_0=-1),
                          f"{PRIM} JOINTS_0: refers to accessors -1, but the file has 4"),
    "JOINTS_0 a string": (lambda j: _attrs(j).update(JOINTS_0="1"),
                          f"{PRIM} JOINTS_0: refers to accessors '1', but the file has 4"),
    "WEIGHTS_0 missing": (lambda j: _attrs(j).pop("WEIGHTS_0"), f"{PRIM}: has JOINTS_0 without its pair"),
    "JOINTS_0 missing": (lambda j: _attrs(j).pop("JOINTS_0"), f"{PRIM}: has WEIGHTS_0 without its pair"),
    "JOINTS_1 alone": (lambda j: _attrs(j).update(JOINTS_1=1), f"{PRIM}: has JOINTS_1 without its pair"),
    "skin joints empty": (lambda j: j["skins"][0].update(joints=[]),
                          "skin 0: joints must be a non-empty array of node indices"),
    "skin joint past the nodes": (lambda j: j["skins"][0].update(joints=[1, 7]),
                                  "skin 0 joints: refers to nodes 7, but the file has 3"),
    "skin joint a float": (lambda j: j["skins"][0].update(joints=[1, 2.0]),
                           "skin 0 joints: refers to nodes 2.0, but the file has 3"),
    "node skin past the skins": (lambda j: j["nodes"][0].update(skin=5),
                                 "node 0 skin: refers to skins 5, but the file has 1"),
    "bufferView past the views": (lambda j: j["accessors"][1].update(bufferView=42),
                                  f"accessor 1 ({PRIM} JOINTS_0): refers to bufferViews 42, but the file has 4"),
    "byteOffset negative": (lambda j: j["accessors"][1].update(byteOffset=-4),
                            f"accessor 1 ({PRIM} JOINTS_0): byteOffset -4 is not a non-negative integer"),
    "sparse index past the accessor": (
        lambda j: j["accessors"][1].update(sparse={"count": 1, "indices": {"bufferView": 0, "componentType": 5125},
                                                   "values": {"bufferView": 1}}),
        # Indices read as UNSIGNED_INT from POSITION's view: the float 1.0's bits.
        f"accessor 1 ({PRIM} JOINTS_0) sparse: index 1065353216 is outside the accessor's 2 elements"),
    # Inverse bind matrices.
    "inverse binds VEC4": (lambda j: j["accessors"][3].update(type="VEC4", count=8),
                           "accessor 3 (skin 0 inverseBindMatrices): must be MAT4 FLOAT, found VEC4 5126"),
    "inverse binds too few": (lambda j: j["accessors"][3].update(count=1),
                              "accessor 3 (skin 0 inverseBindMatrices): has 1 matrices for 2 joints"),
    "inverse binds past the accessors": (lambda j: j["skins"][0].update(inverseBindMatrices=42),
                                         "skin 0 inverseBindMatrices: refers to accessors 42, but the file has 4"),
    # JSON of the wrong kind where an object or array belongs (these raised AttributeError,
    # ValueError or TypeError before: an internal error, exit 3, for a bad file).
    "primitive a number": (lambda j: j["meshes"][0].update(primitives=[3]),
                           f"{PRIM}: must be a JSON object whose attributes are a JSON object"),
    "primitives an object": (lambda j: j["meshes"][0].update(primitives={}),
                             "mesh 0: primitives must be a JSON array, found dict"),
    "sparse a number": (lambda j: j["accessors"][1].update(sparse=3),
                        f"accessor 1 ({PRIM} JOINTS_0) sparse: must be a JSON object, found int"),
    "translation a string": (lambda j: j["nodes"][2].update(translation="abc"),
                             "node 2: translation 'abc' is not an array of 3 numbers"),
    "morph weights a string": (lambda j: j["meshes"][0].update(weights="x"),
                               f"{PRIM}: default morph weights 'x' are not numbers"),
    "targets a number": (lambda j: j["meshes"][0]["primitives"][0].update(targets=3),
                         f"{PRIM}: targets must be a JSON array of objects"),
}


def malformed(folder: Path, name: str) -> Path:
    t = Tiny()
    _skinned(t, np.tile(np.eye(4), (2, 1, 1)))
    CASES[name][0](t.json)
    return t.gltf(folder, f"{re.sub(r'[^a-z0-9]+', '_', name.lower())}.gltf")


def test_the_unbroken_file_is_read(tmp_path):
    t = Tiny()
    _skinned(t, np.tile(np.eye(4), (2, 1, 1)))
    check_before_import(load_gltf(t.gltf(tmp_path)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_malformed_skin_or_accessor_is_refused_naming_what_and_where(tmp_path, name):
    path = malformed(tmp_path, name)
    with pytest.raises(GltfError) as caught:
        check_before_import(load_gltf(path))
    assert isinstance(caught.value, InputError)  # exit 2, never 3
    message = str(caught.value)
    assert message.startswith(f"{path.name}: "), message
    assert message.removeprefix(f"{path.name}: ").startswith(CASES[name][1]), message
