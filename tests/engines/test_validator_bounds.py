# SPDX-License-Identifier: GPL-3.0-or-later
"""The reader's negative-key-time and uri rules count what the Khronos glTF-Validator counts.

Files from tests/hostile/bounded_files.py, run through the validator (validate_resolving.mjs:
absolute paths and file: URLs resolved as a loader on this machine would).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from skin_audit.core.gltf.checks import file_checks
from skin_audit.core.gltf.document import load_gltf
from tests.engines.conftest import run_node
from tests.hostile.bounded_files import with_extra_buffer, with_negative_key_times

SHARED = ("ACCESSOR_ANIMATION_INPUT_NEGATIVE", "NON_RELATIVE_URI")


def _counts(path: Path, engines_dir: Path) -> tuple[dict[str, int], dict[str, int]]:
    theirs = {c: 0 for c in SHARED}
    for m in run_node(engines_dir, "validate_resolving.mjs", str(path))["messages"]:
        if m["code"] in theirs:
            theirs[m["code"]] += 1
    ours = {c: 0 for c in SHARED}
    for finding in file_checks(load_gltf(path)):
        if finding.details.get("validator_code") in ours:
            ours[finding.details["validator_code"]] += finding.details["validator_count"]
    return ours, theirs


@pytest.mark.parametrize("times", [(-0.5, 0.25, 1.0), (-2.0, -1.0, 0.5, 1.0), (0.0, 1.0), (-1e-6, 1.0)])
def test_negative_key_times_are_counted_as_the_validator_counts_them(engines_dir, tmp_path, times):
    ours, theirs = _counts(with_negative_key_times(tmp_path / "a.gltf", times), engines_dir)
    assert ours == theirs
    assert ours["ACCESSOR_ANIMATION_INPUT_NEGATIVE"] == sum(t < 0 for t in times)


def _uri(kind: str, outside: Path) -> str:
    return {"absolute": str(outside / "zeros.bin"), "file_url": (outside / "zeros.bin").as_uri(),
            "climbing": "../outside/zeros.bin", "inside": "sub/../zeros.bin"}[kind]


@pytest.mark.parametrize("kind, used, flagged", [
    ("absolute", True, 1), ("file_url", False, 1), ("climbing", True, 0), ("inside", False, 0),
])
def test_uris_leaving_the_folder_are_counted_as_the_validator_counts_them(engines_dir, tmp_path, kind, used,
                                                                          flagged):
    outside, asset = tmp_path / "outside", tmp_path / "asset"
    outside.mkdir()
    asset.mkdir()
    for folder in (outside, asset):
        (folder / "zeros.bin").write_bytes(bytes(48))
    path = with_extra_buffer(asset / "a.gltf", _uri(kind, outside), used=used)
    ours, theirs = _counts(path, engines_dir)
    assert ours == theirs and theirs["NON_RELATIVE_URI"] == flagged
    reported = any(f.code == "gltf-uri-outside-folder" for f in file_checks(load_gltf(path)))
    assert reported == (kind != "inside")  # ../ is ours alone: the validator has no code for it
