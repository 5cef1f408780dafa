# SPDX-License-Identifier: GPL-3.0-or-later
"""The config file: what it may say, the errors for what it may not, where it is
found, and that every change it makes is listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_samples import GROUP, INFLUENCES, PRESERVE, TWIST, UNWEIGHTED

from skin_audit.core.errors import InputError
from skin_audit.core.reports.config import (
    AuditConfig,
    apply_config,
    find_config,
    load_config,
    option_changes,
    repository_root,
    skip_paths,
)

FULL = """
[audit]
target = "threejs"
max_influences = 8
fail_on = "warning"

[tolerances]
weight_tolerance = "gltf"
asymmetry_tolerance = 0.1

[severity]
stray-weights = "ignore"
engine-divergence = "ERROR"
preserve-volume-on = "warning"

[paths]
skip = ["archive/", "*_wip.blend", "chars/**/old_*.glb"]
"""


def write(folder: Path, text: str, name: str = "skin_audit.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_file(tmp_path):
    config = load_config(write(tmp_path, FULL))
    assert config.target == "threejs" and config.max_influences == 8 and config.fail_on == "warning"
    assert config.tolerances == {"weight_tolerance": "gltf", "asymmetry_tolerance": 0.1}
    assert config.severity == {"stray-weights": "IGNORE", "engine-divergence": "ERROR",
                               "preserve-volume-on": "WARNING"}
    assert config.option_overrides() == {"weight_tolerance": "gltf", "asymmetry_tolerance": 0.1,
                                         "max_influences": 8, "fail_on": "warning", "target": "threejs"}
    changes = option_changes(config, {"max_influences": 4, "fail_on": "error", "weight_tolerance": 1e-4,
                                      "asymmetry_tolerance": 0.1})
    assert {c.code for c in changes} == {"max_influences", "fail_on", "weight_tolerance", "target"}
    assert {c.reason for c in changes if c.code in ("max_influences", "weight_tolerance")} == {
        "[audit] max_influences = 8", "[tolerances] weight_tolerance = 'gltf'"}
    assert load_config(write(tmp_path, "", "empty.toml")) == AuditConfig(str(tmp_path / "empty.toml"),
                                                                          str(tmp_path))


@pytest.mark.parametrize("text, where", [
    ("[audits]\nx = 1\n", "unknown table 'audits'; did you mean 'audit'?"),
    ("[audit]\nmax_influence = 4\n", "[audit]: unknown key 'max_influence'; did you mean 'max_influences'?"),
    ("[severity]\nstray-weight = 'ignore'\n", "[severity]: unknown finding code 'stray-weight'; did you mean"),
    ("[severity]\nstray-weights = 'hide'\n", "[severity] stray-weights = 'hide': expected one of error"),
    ("[audit]\nmax_influences = 0\n", "[audit] max_influences = 0: expected a whole number >= 1"),
    ("[audit]\nmax_influences = true\n", "[audit] max_influences = True"),
    ("[audit]\nfail_on = 'info'\n", "[audit] fail_on = 'info': expected one of error, warning, never"),
    ("[audit]\ntarget = ''\n", "[audit] target = '': expected an engine profile name"),
    ("[tolerances]\nweight_tolerance = -1\n", "[tolerances] weight_tolerance = -1: expected a finite number"),
    ("[tolerances]\nasymmetry_tolerance = 'gltf'\n", "[tolerances] asymmetry_tolerance = 'gltf'"),
    ("[tolerances]\nweight_tolerance = nan\n", "[tolerances] weight_tolerance = nan"),
    ("[paths]\nskip = 'x'\n", "[paths] skip = 'x': expected a list of glob patterns"),
    ("audit = 3\n", "'audit' must be a table"),
    ("[audit\n", "not valid TOML"),
])
def test_errors_name_the_file_and_the_key(tmp_path, text, where):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_config(path)
    assert str(path) in str(info.value) and where in str(info.value)


def test_missing_file_and_known_targets(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(InputError, match="unknown target 'threejs'"):
        load_config(write(tmp_path, FULL), known_targets=("gltf", "raw"))
    assert load_config(write(tmp_path, "[severity]\nnew-code = 'info'\n"), known_codes={"new-code"}).severity


def test_apply_changes_only_what_it_names_and_lists_every_change():
    config = AuditConfig(path="c.toml", severity={"twist-collapse": "IGNORE", "unweighted-vertices": "WARNING",
                                                  "preserve-volume-on": "INFO"})
    before = (TWIST, UNWEIGHTED, PRESERVE, GROUP, INFLUENCES)
    kept, changes = apply_config(before, config, path="a.blend", object="Body", armature="Rig")
    assert [f.code for f in kept] == ["unweighted-vertices", "preserve-volume-on", "group-without-bone",
                                      "too-many-influences"]
    assert kept[0].severity == "WARNING" and kept[0].vertices == UNWEIGHTED.vertices
    assert kept[1:] == (PRESERVE, GROUP, INFLUENCES)  # same severity: not a change
    assert [(c.action, c.code, c.before, c.after) for c in changes] == [
        ("ignore", "twist-collapse", "WARNING", "IGNORE"), ("severity", "unweighted-vertices", "ERROR", "WARNING")]
    assert changes[0].finding == TWIST.to_dict() and changes[0].to_dict()["object"] == "Body"
    assert changes[0].reason == "[severity] twist-collapse = 'ignore'"
    assert apply_config(before, AuditConfig()) == (before, ())


def test_skip_globs(tmp_path):
    config = load_config(write(tmp_path, FULL))
    files = ["archive/a.blend", "deep/archive/b.blend", "x/y_wip.blend", "y_wip.blend.bak",
             "chars/old_a.glb", "chars/hero/v1/old_b.glb", "chars/hero/new.glb"]
    kept, changes = skip_paths([str(tmp_path / f) for f in files], config)
    assert [Path(k).relative_to(tmp_path).as_posix() for k in kept] == [
        "deep/archive/b.blend", "y_wip.blend.bak", "chars/hero/new.glb"]
    assert [c.reason for c in changes] == ["[paths] skip 'archive/'", "[paths] skip '*_wip.blend'",
                                           "[paths] skip 'chars/**/old_*.glb'", "[paths] skip 'chars/**/old_*.glb'"]
    assert all(c.action == "skip-path" for c in changes)


def test_found_beside_the_folder_then_at_the_repository_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    rigs = repo / "assets" / "rigs"
    rigs.mkdir(parents=True)
    (rigs / "a.glb").write_bytes(b"")
    assert repository_root(rigs) == repo.resolve()
    assert find_config([str(rigs)]) is None
    root_file = write(repo, "")
    assert find_config([str(rigs)]) == root_file.resolve()
    assert find_config([str(rigs / "a.glb")]) == root_file.resolve()
    beside = write(rigs, "")
    assert find_config([str(rigs)]) == beside.resolve()
    other = repo / "other"
    other.mkdir()
    with pytest.raises(InputError, match="several config files apply.*--config"):
        find_config([str(rigs), str(other)])
