# SPDX-License-Identifier: GPL-3.0-or-later
"""One argparse front end for ``python -m skin_audit``, ``blender --background
--python scripts/skin_audit_blender.py -- ...`` and ``blender --command skin_audit``.

Exit codes: 0 success; 1 findings at or above the failure level (or a failed
verification); 2 bad usage or input that cannot be audited; 3 an internal error
(a bug); 130 interrupted (Ctrl-C: no report written).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from .batch.command_line import positive_int
from .core.errors import InputError, SkinAuditError
from .core.text import printable, printable_lines
from .core.version import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_UNUSABLE, EXIT_INTERNAL = 0, 1, 2, 3


def parse_angles(text: str) -> list[float]:
    """'0,90,180' -> [0.0, 90.0, 180.0]; a clear error for anything else."""
    parts = [p.strip() for p in text.split(",")]
    try:
        angles = [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad angle list {text!r}: expected degrees separated by commas, e.g. 0,90,180"
        ) from None
    if not angles or not all(math.isfinite(a) for a in angles):
        raise argparse.ArgumentTypeError(f"bad angle list {text!r}: angles must be finite numbers")
    return angles


def _frames(text: str) -> tuple[float | None, float | None, float]:
    """``START:END[:STEP]`` (or ``::STEP``: every action's own range at that step)."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"expected START:END or START:END:STEP, got {text!r}")
    try:
        numbers = [float(p) if p.strip() else None for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers in START:END[:STEP], got {text!r}") from None
    start, end = numbers[0], numbers[1]
    step = numbers[2] if len(numbers) == 3 and numbers[2] is not None else 1.0
    if any(v is not None and not math.isfinite(v) for v in numbers) or step <= 0:
        raise argparse.ArgumentTypeError(f"frames must be finite and the step above 0, got {text!r}")
    if (start is None) != (end is None) or (start is not None and end is not None and end < start):
        raise argparse.ArgumentTypeError(f"give both START and END (END not before START), or neither: {text!r}")
    return start, end, step


#: Blender's frame range (scene.frame_set clamps to it; measured with bpy 4.2 and 5.0: MINAFRAME, MAXFRAME).
BLENDER_FRAMES = (-1048574, 1048574)
#: Scene.frame_set takes a C int: a number beyond it is no frame at all.
_INT32 = 2**31 - 1


def _frame(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole frame number, got {text!r}") from None
    if abs(value) > _INT32:
        raise argparse.ArgumentTypeError(f"{text} is no frame number: Blender's frames run from "
                                         f"{BLENDER_FRAMES[0]} to {BLENDER_FRAMES[1]}")
    return value


def _weight_tolerance(text: str) -> float | str:
    if text.lower() == "gltf":
        return "gltf"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'gltf', got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _target_names() -> list[str]:
    from .core.engines.targets import TARGETS

    return list(TARGETS)


def _target_help() -> str:
    from .core.engines.targets import TARGETS

    return "; ".join(f"{t.name} ({'verified against the running engine' if t.verified else 'modelled'})"
                     for t in TARGETS.values())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skin_audit",
        description="Audit skeletal skinning: tell wrong data (bind pose, weights) from algorithm limits.",
    )
    parser.add_argument("--version", action="version", version=f"skin_audit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the twisted-cylinder experiment in Blender and write its outputs")
    demo.add_argument("--out", required=True, metavar="DIR", help="existing folder for the outputs")
    demo.add_argument("--angles", type=parse_angles, default=[0.0, 90.0, 180.0], metavar="DEG,DEG,...",
                      help="child twist angles in degrees (default 0,90,180)")
    demo.add_argument("--method", choices=("lbs", "dqs", "both"), default="both",
                      help="linear blend skinning, dual quaternions (Preserve Volume), or both (default)")

    audit = sub.add_parser("audit", help="audit the skinning of .blend, .glb/.gltf or .fbx files or folders")
    audit.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (searched recursively)")
    audit.add_argument("--json", metavar="OUT", help="write the JSON report here (docs/report-format.md)")
    audit.add_argument("--junit", metavar="FILE", help="also write JUnit XML for CI test reporters "
                       "(docs/report-formats-ci.md)")
    audit.add_argument("--sarif", metavar="FILE", help="also write a SARIF 2.1.0 log for code scanning")
    audit.add_argument("--sarif-help-uri", metavar="URI",
                       help="absolute URL of docs/report-format.md; SARIF rules link to URI#code")
    audit.add_argument("--html", metavar="FILE", help="also write one self-contained HTML page with pictures")
    audit.add_argument("--config", metavar="FILE", help="TOML config: severities, ignores, options, paths to "
                       "skip (default: skin_audit.toml beside the audited folder or at the repository root)")
    # Defaults None: a flag given on the command line wins over the config file, the file over the default.
    audit.add_argument("--max-influences", type=positive_int, default=None, metavar="N",
                       help="deform weights per vertex an engine keeps (default 4)")
    audit.add_argument("--weight-tolerance", type=_weight_tolerance, default=None, metavar="TOL|gltf",
                       help="allowed |sum of weights - 1| (default 1e-4; 'gltf' = 2e-7 x non-zero weights)")
    audit.add_argument("--fail-on", choices=("error", "warning", "never"), default=None,
                       help="exit 1 when a finding is at or above this severity (default error)")
    audit.add_argument("--object", metavar="NAME", help="audit only this mesh object")
    audit.add_argument("--no-shape-checks", action="store_true",
                       help="skip the extreme-pose sweep, symmetry and stray-weight checks (faster)")
    audit.add_argument("--target", type=str.lower, choices=_target_names(), default=None, metavar="NAME",
                       help="engine whose drawing the audit compares with Blender's (default threejs; "
                       "docs/engines.md): " + _target_help())
    audit.add_argument("--frame", type=_frame, default=None, metavar="N",
                       help="audit at this frame (set on load, never saved); for glTF its animation at "
                       f"time N / fps. Blender's frames run from {BLENDER_FRAMES[0]} to {BLENDER_FRAMES[1]}: "
                       "a frame beyond is audited (and reported) at the nearest end")
    audit.add_argument("--clip", metavar="NAME", default=None,
                       help="glTF animation played at --frame (name or index; default the first)")
    audit.add_argument("--min-severity", type=str.lower, choices=("info", "warning", "error"), default="info",
                       help="list findings at or above this severity on the terminal (default info: all); the "
                       "others are still counted per code (the report files always hold every finding)")
    audit.add_argument("--quiet", "-q", action="store_true",
                       help="terminal: only files with a listed finding or that could not be audited, their "
                       "findings and counts, the totals and the report files; no metric lines, no progress line")
    audit.add_argument("--rest-pose", type=str.lower, choices=("t", "a"), default=None,
                       help="the rest pose the pipeline wants: a humanoid resting otherwise is a WARNING "
                       "(default: measured and reported as INFO)")
    audit.add_argument("--animation", nargs="?", const="", default=None, metavar="ACTION[,ACTION...]",
                       help="also play every action that animates each rig (or the named ones) frame by frame, "
                       "as Blender poses it, and judge every frame: collapse, volume, engine divergence, and the "
                       "keys themselves")
    audit.add_argument("--frames", type=_frames, default=None, metavar="START:END[:STEP]",
                       help="with --animation: the frames to play (default each action's own range, every frame)")
    from .batch.command_line import add_arguments as add_batch_arguments

    add_batch_arguments(audit)  # --jobs, --file-timeout, --file-memory-mb, --scheduler

    _add_fix_parser(sub)

    verify = sub.add_parser("verify", help="independently recheck a twist scene JSON (numpy only)")
    verify.add_argument("scene", metavar="SCENE.json")
    return parser


def _fixable() -> list[str]:
    from .core.codes import FIXABLE  # (the codes table, numpy-free: --help needs no Blender)

    return list(FIXABLE)


def _threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a weight, got {text!r}") from None
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise argparse.ArgumentTypeError(f"must be a weight between 0 and 1, got {text!r}")
    return value


def _add_fix_parser(sub: Any) -> None:
    fix = sub.add_parser("fix", help="write a repaired copy of a file: the fixes of the given finding codes "
                         "(docs/fixes.md)")
    fix.add_argument("path", metavar="PATH", help=".blend, .glb/.gltf or .fbx file")
    fix.add_argument("--code", action="append", required=True, choices=_fixable(), metavar="CODE",
                     help="finding to fix (repeat for several, applied in order): " + ", ".join(_fixable()))
    fix.add_argument("--out", metavar="FIXED", help="the repaired copy: .blend, or .glb/.gltf through "
                     "Blender's exporter; never the input")
    fix.add_argument("--in-place", action="store_true", help="write over the input instead of --out")
    fix.add_argument("--object", metavar="NAME", help="fix only this mesh object")
    fix.add_argument("--max-influences", type=positive_int, default=4, metavar="N",
                     help="too-many-influences: deform weights kept per vertex (default 4)")
    fix.add_argument("--stray-action", choices=("islands", "below"), default="islands",
                     help="stray-weights: remove the audit's islands and far weights (default), or every "
                     "deform weight below --threshold")
    fix.add_argument("--threshold", type=_threshold, default=0.01, metavar="W",
                     help="stray-weights with --stray-action below: the weight under which they go (default 0.01)")
    fix.add_argument("--group-action", choices=("remove", "merge"), default="remove",
                     help="group-without-bone, weights-on-non-deform-bone: remove the group (default) or "
                     "merge its weights into a deform bone's group")
    fix.add_argument("--merge-into", metavar="BONE", default="",
                     help="the deform bone merged weights go to (default: the nearest unlocked one)")
    fix.add_argument("--direction", choices=("left-to-right", "right-to-left"), default="left-to-right",
                     help="weight-asymmetry: which side's weights are copied to the other (default left-to-right)")
    fix.add_argument("--fail-on", choices=("error", "warning", "never"), default="error",
                     help="exit 1 when the re-audit has a finding at or above this severity (default error)")


def _run_fix(args: argparse.Namespace, out: TextIO) -> int:
    from .blender.session import require_bpy
    from .core.findings import SEVERITY_RANK

    require_bpy()
    from .blender.fix.files import fix_file, fix_target, summary_text

    target = fix_target(args.path, args.out, args.in_place)  # before any work
    from .blender.fix.apply import FixSettings

    settings = FixSettings(max_influences=args.max_influences, threshold=args.threshold,
                           group_action=args.group_action, merge_into=args.merge_into,
                           mirror_direction=args.direction, stray_action=args.stray_action)
    result = fix_file(args.path, args.code, target, settings, args.object)
    out.write(summary_text(result))
    if args.fail_on == "never":
        return EXIT_OK
    rank = SEVERITY_RANK[args.fail_on.upper()]
    return EXIT_FINDINGS if any(SEVERITY_RANK[s] >= rank for _, _, s in result.after) else EXIT_OK


def _run_demo(args: argparse.Namespace, out: TextIO) -> int:
    from .core.output_files import require_output_dir

    require_output_dir(args.out)  # fail before any Blender work
    from .blender.session import require_bpy

    require_bpy()
    from .blender.run.twist_files import run_and_write_demo

    methods = ("lbs", "dqs") if args.method == "both" else (args.method,)
    summary, errors = run_and_write_demo(args.out, args.angles, methods)
    out.write(summary)
    return EXIT_FINDINGS if errors else EXIT_OK


def _report_targets(args: argparse.Namespace) -> dict[str, Path]:
    """--json/--junit/--sarif/--html targets, checked before any work."""
    from .core.input_guard import INPUT_SUFFIXES, check_report_target
    from .core.output_files import require_output_dir

    targets = {flag: Path(value).resolve() for flag in ("json", "junit", "sarif", "html")
               if (value := getattr(args, flag)) is not None}
    for flag in targets:
        # Never let a report replace an input, land in an input folder as an input, or replace a read-only file.
        require_output_dir(check_report_target(getattr(args, flag), args.paths, INPUT_SUFFIXES, f"--{flag}").parent)
    if len(set(targets.values())) < len(targets):
        raise InputError("two report options name the same file; give each report its own file")
    return targets


def _write_reports(texts: dict[Path, str]) -> None:
    """All report files or none, across folders: a failure in one folder leaves every earlier file as it was."""
    from .core.output_files import write_files

    write_files(texts)


def _run_audit(args: argparse.Namespace, out: TextIO) -> int:
    import dataclasses

    from .core.audit.options import AuditOptions
    from .core.reports.config import AuditConfig, find_config, load_config, option_changes, skip_paths

    targets = _report_targets(args)  # fail before any work
    config_path = Path(args.config) if args.config else find_config(args.paths)
    if args.config and config_path.exists() and not config_path.is_file():  # a FIFO would block the read
        raise InputError(f"--config {args.config!r} is not a regular file (a FIFO, a device or a folder); "
                         "give the TOML file")
    # A config's [audit] target must name an engine target (docs/engines.md), said with the file and key.
    config = load_config(config_path, known_targets=_target_names()) if config_path is not None else AuditConfig()
    fields = {f.name for f in dataclasses.fields(AuditOptions)}
    overrides = config.option_overrides()
    if "target" in overrides and "target" not in fields:
        raise InputError(f"{config.path}: [audit] target: this version of skin_audit has no engine targets; "
                         "remove the key")
    if args.frame is not None and not BLENDER_FRAMES[0] <= args.frame <= BLENDER_FRAMES[1]:
        used = min(max(args.frame, BLENDER_FRAMES[0]), BLENDER_FRAMES[1])
        sys.stderr.write(f"skin_audit: --frame {args.frame} is beyond Blender's frames; auditing (and reporting) "
                         f"frame {used}, where Blender clamps it\n")
        args.frame = used
    given = {"max_influences": args.max_influences, "weight_tolerance": args.weight_tolerance,
             "fail_on": args.fail_on, "target": args.target, "frame": args.frame, "clip": args.clip,
             "rest_pose": args.rest_pose}
    if args.animation is not None:
        given["animation"] = tuple(n.strip() for n in args.animation.split(",") if n.strip())
        if args.frames is not None:
            start, end, step = args.frames
            given.update({"animation_frames": None if start is None else (start, end), "animation_step": step})
    elif args.frames is not None:
        raise InputError("--frames needs --animation (it names the frames the actions are played at)")
    overrides.update({k: v for k, v in given.items() if v is not None})
    options = AuditOptions(shape_checks=not args.no_shape_checks,
                           **{k: v for k, v in overrides.items() if k in fields})
    from .core.engines.targets import get_target

    get_target(options.target)  # an unknown target from the config file is bad usage, before any work
    from .blender.session import require_bpy

    require_bpy()

    from .blender.run.audit_files import audit_paths, make_report
    from .core.findings import at_or_above
    from .core.input_guard import expand_paths
    from .core.output_files import json_text
    from .core.reports.text import summary_text, write_lines

    expanded = expand_paths(args.paths)
    kept, changes = skip_paths([str(p) for p, problem in expanded if not problem], config)
    todo = [str(p) for p, problem in expanded if problem or str(p) in kept]
    # Options the config set, unless a flag overrode them.
    changes = [c for c in option_changes(config, AuditOptions().to_dict()) if given.get(c.code) is None] + changes
    pictures: dict[tuple[str, str], Any] = {}
    from .batch.command_line import audit_in_workers

    files = audit_in_workers(args, todo, options, "--html" if "html" in targets else None)
    if files is None:  # in this process: one file, --html, or inside a Blender executable
        files = _audit_here(args, todo, options, audit_paths, pictures if "html" in targets else None)
    if not todo:  # every file was skipped: a gate that audits nothing does not pass
        files = _nothing_audited(args.paths, [c for c in changes if c.action == "skip-path"], config.path)
    from .core.skeleton import cross_file_findings

    files, finding_changes = _apply_config(cross_file_findings(files), config)
    changes += finding_changes
    report = make_report(files, options)
    data = report.to_dict()
    if config.path:
        data["config"] = {"path": config.path, "changes": [c.to_dict() for c in changes]}
    if targets:
        _write_reports(_render(targets, data, options.fail_on, args.sarif_help_uri, pictures, json_text))
    written = [(kind, str(targets[flag])) for flag, kind in REPORT_KINDS if flag in targets]
    out.write(summary_text(data, options.fail_on, min_severity=args.min_severity, quiet=args.quiet,
                           written=written))
    if changes:
        write_lines(out, [f"config {config.path}: {len(changes)} change(s), listed in the reports"])
    if any(fa.error_kind == "internal" for fa in files):
        return EXIT_INTERNAL  # our own bug on some file: the report holds every other file
    if any(fa.status != "ok" for fa in files):
        return EXIT_UNUSABLE
    findings = [f for fa in files for f in fa.findings]
    return EXIT_FINDINGS if at_or_above(findings, options.fail_on) else EXIT_OK


#: Report flags and their names on the terminal's ``reports:`` line, in the order written there.
REPORT_KINDS = (("json", "JSON"), ("junit", "JUnit"), ("sarif", "SARIF"), ("html", "HTML"))


def _audit_here(args: argparse.Namespace, todo: list[str], options: Any, audit_paths: Any,
                pictures: dict[tuple[str, str], Any] | None) -> tuple[Any, ...]:
    """The files audited in this process, Blender's own output kept apart (``batch/console``):
    its lines go to stderr each on a line of its own, never into the progress line or on
    stdout; with --quiet only a file that could not be audited has them, its last lines."""
    from .batch.console import OutputAside, last_lines
    from .batch.process import STDERR_TAIL_LINES
    from .core.reports.progress import Progress, file_sizes

    with OutputAside() as aside:
        progress = Progress(len(todo), aside.stderr, enabled=False if args.quiet else None,
                            weights=file_sizes(todo))
        if not args.quiet:
            aside.forward = progress.note

        def file_done(result: Any) -> None:
            if pictures is not None and result.status == "ok":
                from .blender.run.report_pictures import mesh_pictures

                pictures.update(mesh_pictures(result))  # the file is still loaded
            log = aside.take()
            progress.done(result.status == "ok")
            if args.quiet and result.status != "ok" and last_lines(log, STDERR_TAIL_LINES):
                progress.note([f"skin_audit: Blender's output while loading {result.path} (last lines):",
                               *last_lines(log, STDERR_TAIL_LINES)])
            if progress.files_done < len(todo):
                progress.start(todo[progress.files_done])

        if todo:
            progress.start(todo[0])
        try:
            files: tuple[Any, ...] = tuple(audit_paths(todo, options, args.object, progress=file_done))
        except Exception:  # a bug of ours: what Blender said last may explain it
            if args.quiet:
                progress.note(last_lines(aside.take(), STDERR_TAIL_LINES))
            raise
        progress.finish()
    return files


def _nothing_audited(paths: Sequence[str], skipped: Sequence[Any], config_path: str) -> tuple[Any, ...]:
    """One error entry per path when the config's [paths] skip left no file to audit (exit 2, like a
    folder without rigs)."""
    from .core.audit.report import FileAudit

    patterns = sorted({c.reason for c in skipped})
    return tuple(FileAudit(str(p), "error", message=f"{p}: nothing audited: {config_path} skips every file "
                           f"given ({len(skipped)} skipped by {', '.join(patterns)}); narrow the pattern or "
                           "audit another path", error_kind="input") for p in paths)


def _apply_config(files: Any, config: Any) -> tuple[tuple[Any, ...], list[Any]]:
    """Each file's rig and mesh findings re-graded or dropped as the config says, with every change."""
    import dataclasses

    from .core.reports.config import apply_config

    changes: list[Any] = []
    out = []
    for fa in files:
        rigs = []
        for rig in fa.rigs:
            kept, ch = apply_config(rig.findings, config, path=fa.path, object=rig.armature, armature=rig.armature)
            rigs.append(dataclasses.replace(rig, findings=kept))
            changes += ch
        meshes = []
        for mesh in fa.meshes:
            kept, ch = apply_config(mesh.findings, config, path=fa.path, object=mesh.object,
                                    armature=mesh.armature)
            meshes.append(dataclasses.replace(mesh, findings=kept))
            changes += ch
        out.append(dataclasses.replace(fa, rigs=tuple(rigs), meshes=tuple(meshes)))
    return tuple(out), changes


def _render(targets: dict[str, Path], data: dict[str, Any], fail_on: str, help_uri: str | None,
            pictures: dict[tuple[str, str], Any], json_text: Any) -> dict[Path, str]:
    """Every requested report file's text, rendered before any is written."""
    texts: dict[Path, str] = {}
    if "json" in targets:
        texts[targets["json"]] = json_text(data)
    if "junit" in targets:
        from .core.reports.junit import junit_xml

        texts[targets["junit"]] = junit_xml(data, fail_on)
    if "sarif" in targets:
        from .core.reports.sarif import sarif_json

        texts[targets["sarif"]] = sarif_json(data, help_uri)
    if "html" in targets:
        from .core.reports.html import html_page

        texts[targets["html"]] = html_page(data, fail_on, pictures)
    return texts


def _run_verify(args: argparse.Namespace, out: TextIO) -> int:
    from .core.twist.verify import load_scene, verify_scene

    result = verify_scene(load_scene(args.scene))
    out.write(
        f"verified {args.scene}: {result.poses} poses x {result.vertices} vertices recomputed; "
        f"max |G B^-1 - stored| {result.max_product_error:.3g}, numpy {result.max_numpy_error:.3g}, "
        f"Blender {result.max_blender_error:.3g}, ring radius {result.max_radius_error:.3g}: PASS\n"
    )
    return EXIT_OK


COMMANDS = {"demo": _run_demo, "audit": _run_audit, "fix": _run_fix, "verify": _run_verify}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command line; return the exit code instead of exiting (Blender needs that)."""
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help, --version and usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_UNUSABLE
    from .core.heap import keep_freed_memory
    from .core.interrupt import EXIT_INTERRUPTED, sigint_stops_the_run

    keep_freed_memory()  # a command's own process: reuse freed arrays instead of faulting in new ones
    try:
        with sigint_stops_the_run():
            return COMMANDS[args.command](args, out)
    except InputError as exc:
        err.write(f"skin_audit: error: {printable(exc)}\n")
        return EXIT_UNUSABLE
    except SkinAuditError as exc:
        err.write(f"skin_audit: {args.command} failed: {printable(exc)}\n")
        return EXIT_FINDINGS if exc.code == "verification-failed" else EXIT_UNUSABLE
    except KeyboardInterrupt:
        err.write(f"skin_audit: {args.command} interrupted; no report or output written\n")
        return EXIT_INTERRUPTED
    except Exception:  # a bug of ours, never reported as findings (exit 1) or bad input (exit 2)
        import traceback

        err.write(f"skin_audit: internal error in {args.command} (a skin_audit bug; please report it):\n"
                  f"{printable_lines(traceback.format_exc())}")
        return EXIT_INTERNAL
