# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit's config file (``--config FILE``, or ``skin_audit.toml`` found
beside the audited folder or at the repository root), and what it changed.

Layout (every table and key optional; anything else is an error naming the
file and the key)::

    [audit]
    target = "threejs"          # engine profile
    max_influences = 4
    fail_on = "warning"         # error | warning | never

    [tolerances]
    weight_tolerance = 1e-4     # or "gltf"
    asymmetry_tolerance = 0.05

    [severity]                  # per finding code: error | warning | info | ignore
    stray-weights = "ignore"
    engine-divergence = "error"

    [paths]
    skip = ["archive/**", "*_wip.blend"]

Nothing is silently hidden: ``apply_config`` and ``skip_paths`` return a
``ConfigChange`` for every finding re-graded or ignored and every file
skipped, and the report lists them.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputError
from ..findings import Finding, Severity
from .code_help import CODE_HELP

CONFIG_NAME = "skin_audit.toml"
SEVERITY_CHOICES = ("error", "warning", "info", "ignore")
FAIL_ON_CHOICES = ("error", "warning", "never")
#: [tolerances] keys, each an AuditOptions field of the same name.
TOLERANCE_KEYS = ("weight_tolerance", "asymmetry_tolerance", "collapse_threshold", "volume_threshold",
                  "divergence_relative")
_TABLES: dict[str, tuple[str, ...]] = {
    "audit": ("target", "max_influences", "fail_on", "rest_pose"),
    "tolerances": TOLERANCE_KEYS,
    "severity": (),  # keys are finding codes
    "paths": ("skip",),
}


@dataclass(frozen=True)
class AuditConfig:
    """A loaded config file; the empty default changes nothing."""

    #: The file it came from ('' when none).
    path: str = ""
    #: Folder the skip globs are relative to (the file's folder).
    root: str = ""
    #: Finding code -> 'ERROR', 'WARNING', 'INFO' or 'IGNORE'.
    severity: Mapping[str, str] = field(default_factory=dict)
    target: str | None = None
    max_influences: int | None = None
    fail_on: str | None = None
    #: AuditOptions field -> value (a float, or 'gltf' for weight_tolerance).
    tolerances: Mapping[str, float | str] = field(default_factory=dict)
    skip: tuple[str, ...] = ()
    #: The rest pose the pipeline wants ("t" or "a").
    rest_pose: str | None = None

    def option_overrides(self) -> dict[str, Any]:
        """AuditOptions fields this config sets (the CLI lets its own flags win)."""
        out: dict[str, Any] = dict(self.tolerances)
        if self.max_influences is not None:
            out["max_influences"] = self.max_influences
        if self.fail_on is not None:
            out["fail_on"] = self.fail_on
        if self.target is not None:
            out["target"] = self.target
        if self.rest_pose is not None:
            out["rest_pose"] = self.rest_pose
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "severity": dict(self.severity), "target": self.target,
                "max_influences": self.max_influences, "fail_on": self.fail_on,
                "tolerances": dict(self.tolerances), "skip": list(self.skip), "rest_pose": self.rest_pose}


@dataclass(frozen=True)
class ConfigChange:
    """One thing the config changed: a finding re-graded or ignored, a file skipped, an option set."""

    #: 'severity', 'ignore', 'skip-path' or 'option'.
    action: str
    path: str = ""
    object: str = ""
    armature: str = ""
    #: Finding code, or the option's name for 'option'.
    code: str = ""
    before: str = ""
    after: str = ""
    #: The config entry responsible, e.g. "[severity] stray-weights = 'ignore'".
    reason: str = ""
    #: The finding as it was (``Finding.to_dict()``), for 'severity' and 'ignore'.
    finding: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "path": self.path, "object": self.object,
                               "armature": self.armature, "code": self.code, "before": self.before,
                               "after": self.after, "reason": self.reason}
        if self.finding is not None:
            out["finding"] = dict(self.finding)
        return out


def _where(path: Path | str, table: str, key: str = "") -> str:
    return f"{path}: [{table}]" + (f" {key}" if key else "")


def _choice(value: object, choices: Sequence[str], where: str) -> str:
    if not isinstance(value, str) or value.lower() not in choices:
        raise InputError(f"{where} = {value!r}: expected one of {', '.join(choices)}")
    return value.lower()


def _number(value: object, where: str, *, allow_gltf: bool = False) -> float | str:
    if allow_gltf and isinstance(value, str) and value.lower() == "gltf":
        return "gltf"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        extra = " or 'gltf'" if allow_gltf else ""
        raise InputError(f"{where} = {value!r}: expected a finite number >= 0{extra}")
    return float(value)


def _unknown(what: str, name: str, known: Iterable[str], where: str) -> InputError:
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(sorted(known))}"
    return InputError(f"{where}: unknown {what} {name!r}{hint}")


def load_config(path: str | os.PathLike[str], known_codes: Collection[str] | None = None,
                known_targets: Collection[str] | None = None) -> AuditConfig:
    """Read and check a config file.

    Parameters
    ----------
    path : path of the TOML file.
    known_codes : finding codes ``[severity]`` may name (default: every documented code).
    known_targets : engine profiles ``target`` may name (default: any non-empty name).

    Raises
    ------
    InputError
        Missing or unreadable file, bad TOML, or an unknown table, key, code or value,
        naming the file and the key.
    """
    file = Path(path)
    codes = set(CODE_HELP) if known_codes is None else set(known_codes)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"config file {str(file)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read config file {str(file)!r}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{file}: not valid TOML: {exc}") from exc
    except RecursionError:  # arrays or inline tables nested thousands deep: no config of ours
        raise InputError(f"{file}: not a skin_audit config: values nested too deeply for the TOML reader") \
            from None
    for table, body in data.items():
        if table not in _TABLES:
            raise _unknown("table", table, _TABLES, f"{file}")
        if not isinstance(body, dict):
            raise InputError(f"{file}: {table!r} must be a table ([{table}]), got {body!r}")
        for key in body:
            if table == "severity":
                if key not in codes:
                    raise _unknown("finding code", key, codes, _where(file, table))
            elif key not in _TABLES[table]:
                raise _unknown("key", key, _TABLES[table], _where(file, table))
    audit, tol = data.get("audit", {}), data.get("tolerances", {})
    target = audit.get("target")
    if target is not None:
        if not isinstance(target, str) or not target:
            raise InputError(f"{_where(file, 'audit', 'target')} = {target!r}: expected an engine profile name")
        if known_targets is not None and target not in known_targets:
            raise _unknown("target", target, known_targets, _where(file, "audit", "target"))
    max_inf = audit.get("max_influences")
    if max_inf is not None and (isinstance(max_inf, bool) or not isinstance(max_inf, int) or max_inf < 1):
        raise InputError(f"{_where(file, 'audit', 'max_influences')} = {max_inf!r}: expected a whole number >= 1")
    fail_on = audit.get("fail_on")
    if fail_on is not None:
        fail_on = _choice(fail_on, FAIL_ON_CHOICES, _where(file, "audit", "fail_on"))
    rest_pose = audit.get("rest_pose")
    if rest_pose is not None:
        rest_pose = _choice(rest_pose, ("t", "a"), _where(file, "audit", "rest_pose"))
    tolerances = {k: _number(v, _where(file, "tolerances", k), allow_gltf=k == "weight_tolerance")
                  for k, v in tol.items()}
    severity = {code: _choice(v, SEVERITY_CHOICES, _where(file, "severity", code)).upper()
                for code, v in data.get("severity", {}).items()}
    skip = data.get("paths", {}).get("skip", [])
    if not isinstance(skip, list) or not all(isinstance(s, str) and s for s in skip):
        raise InputError(f"{_where(file, 'paths', 'skip')} = {skip!r}: expected a list of glob patterns")
    return AuditConfig(str(file), str(file.resolve().parent), severity, target, max_inf, fail_on, tolerances,
                       tuple(skip), rest_pose)


def repository_root(start: str | os.PathLike[str]) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.git`` (folder or file), or None."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def find_config(paths: Sequence[str | os.PathLike[str]]) -> Path | None:
    """The config file for an audit of ``paths`` when no ``--config`` is given.

    For each path: ``skin_audit.toml`` in the audited folder (a file's own
    folder), else at the repository root above it.  One file is used, never a
    merge; paths that find different files are an error asking for ``--config``.
    """
    found: dict[Path, str] = {}
    for p in paths:
        target = Path(p).resolve()
        folder = target if target.is_dir() else target.parent
        candidates = [folder / CONFIG_NAME]
        root = repository_root(folder) if folder.exists() else None
        if root is not None:
            candidates.append(root / CONFIG_NAME)
        for c in candidates:
            if c.is_file():
                found.setdefault(c, str(p))
                break
    if len(found) > 1:
        listed = ", ".join(f"{c} (for {p})" for c, p in found.items())
        raise InputError(f"several config files apply: {listed}; choose one with --config FILE")
    return next(iter(found), None)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """gitignore-like glob: '*' and '?' stay within a folder, '**/' spans folders."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def skip_reason(path: str | os.PathLike[str], config: AuditConfig) -> str:
    """The ``[paths] skip`` glob that skips ``path``, or ''.

    Globs match the path relative to the config file's folder (as given when
    it lies elsewhere); a glob without '/' matches the file name at any depth.
    """
    p = Path(path)
    rel = PurePosixPath(p.as_posix())
    if config.root:
        try:
            rel = PurePosixPath(p.resolve().relative_to(config.root).as_posix())
        except ValueError:
            pass
    for pattern in config.skip:
        glob = pattern + "**" if pattern.endswith("/") else pattern  # 'archive/' = everything in it
        if _glob_regex(glob).match(str(rel) if "/" in glob else rel.name):
            return pattern
    return ""


def skip_paths(paths: Iterable[str], config: AuditConfig) -> tuple[list[str], list[ConfigChange]]:
    """Split audited files into those kept and a 'skip-path' change for each skipped one."""
    kept: list[str] = []
    changes: list[ConfigChange] = []
    for p in paths:
        pattern = skip_reason(p, config)
        if pattern:
            changes.append(ConfigChange("skip-path", path=str(p), reason=f"[paths] skip {pattern!r}"))
        else:
            kept.append(p)
    return kept, changes


def apply_config(findings: Iterable[Finding], config: AuditConfig, *, path: str = "", object: str = "",
                 armature: str = "") -> tuple[tuple[Finding, ...], tuple[ConfigChange, ...]]:
    """Re-grade or drop findings of one mesh as ``[severity]`` says.

    Returns the findings to report and one change per finding affected
    (``path``, ``object`` and ``armature`` only label the changes).
    """
    kept: list[Finding] = []
    changes: list[ConfigChange] = []
    for f in findings:
        wanted = config.severity.get(f.code)
        if wanted is None or wanted == f.severity:
            kept.append(f)
            continue
        reason = f"[severity] {f.code} = {wanted.lower()!r}"
        action = "ignore" if wanted == "IGNORE" else "severity"
        changes.append(ConfigChange(action, path, object, armature, f.code, f.severity, wanted, reason,
                                    f.to_dict()))
        if action == "severity":
            new: Severity = "ERROR" if wanted == "ERROR" else "WARNING" if wanted == "WARNING" else "INFO"
            kept.append(replace(f, severity=new))
    return tuple(kept), tuple(changes)


def option_changes(config: AuditConfig, defaults: Mapping[str, Any]) -> list[ConfigChange]:
    """An 'option' change for every option the config sets to a value other than ``defaults``."""
    return [ConfigChange("option", code=name, before=str(defaults.get(name)), after=str(value),
                         reason=f"[{'tolerances' if name in TOLERANCE_KEYS else 'audit'}] {name} = {value!r}")
            for name, value in config.option_overrides().items() if defaults.get(name) != value]
