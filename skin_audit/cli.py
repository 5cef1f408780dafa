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
from typing import TextIO

from . import __version__
from .core.errors import InputError, SkinAuditError

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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
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
    audit.add_argument("--max-influences", type=_positive_int, default=4, metavar="N",
                       help="deform weights per vertex an engine keeps (default 4)")
    audit.add_argument("--weight-tolerance", type=_weight_tolerance, default=1e-4, metavar="TOL|gltf",
                       help="allowed |sum of weights - 1| (default 1e-4; 'gltf' = 2e-7 x non-zero weights)")
    audit.add_argument("--fail-on", choices=("error", "warning", "never"), default="error",
                       help="exit 1 when a finding is at or above this severity (default error)")
    audit.add_argument("--object", metavar="NAME", help="audit only this mesh object")
    audit.add_argument("--no-shape-checks", action="store_true",
                       help="skip the extreme-pose sweep, symmetry and stray-weight checks (faster)")

    verify = sub.add_parser("verify", help="independently recheck a twist scene JSON (numpy only)")
    verify.add_argument("scene", metavar="SCENE.json")
    return parser


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


def _run_audit(args: argparse.Namespace, out: TextIO) -> int:
    from pathlib import Path

    from .core.audit.options import AuditOptions
    from .core.output_files import require_output_dir

    if args.json:
        from .core.input_guard import INPUT_SUFFIXES, check_report_target

        # Fail before any work; never let the report replace an input or a read-only file.
        require_output_dir(check_report_target(args.json, args.paths, INPUT_SUFFIXES).parent)
    from .blender.session import require_bpy

    require_bpy()

    from .blender.run.audit_files import audit_paths, make_report
    from .core.audit.summary import audit_summary_text
    from .core.findings import at_or_above
    from .core.output_files import json_text, write_all

    options = AuditOptions(max_influences=args.max_influences, weight_tolerance=args.weight_tolerance,
                           fail_on=args.fail_on, shape_checks=not args.no_shape_checks)
    files = audit_paths(args.paths, options, args.object)
    report = make_report(files, options)
    if args.json:
        target = Path(args.json).resolve()
        write_all(target.parent, {target.name: json_text(report.to_dict())})
    out.write(audit_summary_text(report, args.fail_on))
    if any(getattr(fa, "error_kind", "") == "internal" for fa in files):
        return EXIT_INTERNAL  # our own bug on some file: the report holds the rest
    if any(fa.status != "ok" for fa in files):
        return EXIT_UNUSABLE
    findings = [f for fa in files for f in fa.findings]
    return EXIT_FINDINGS if at_or_above(findings, args.fail_on) else EXIT_OK


def _run_verify(args: argparse.Namespace, out: TextIO) -> int:
    from .core.twist.verify import load_scene, verify_scene

    result = verify_scene(load_scene(args.scene))
    out.write(
        f"verified {args.scene}: {result.poses} poses x {result.vertices} vertices recomputed; "
        f"max |G B^-1 - stored| {result.max_product_error:.3g}, numpy {result.max_numpy_error:.3g}, "
        f"Blender {result.max_blender_error:.3g}, ring radius {result.max_radius_error:.3g}: PASS\n"
    )
    return EXIT_OK


COMMANDS = {"demo": _run_demo, "audit": _run_audit, "verify": _run_verify}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command line; return the exit code instead of exiting (Blender needs that)."""
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # --help, --version and usage errors
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_UNUSABLE
    from .core.interrupt import EXIT_INTERRUPTED, sigint_stops_the_run

    try:
        with sigint_stops_the_run():
            return COMMANDS[args.command](args, out)
    except InputError as exc:
        err.write(f"skin_audit: error: {exc}\n")
        return EXIT_UNUSABLE
    except SkinAuditError as exc:
        err.write(f"skin_audit: {args.command} failed: {exc}\n")
        return EXIT_FINDINGS if exc.code == "verification-failed" else EXIT_UNUSABLE
    except KeyboardInterrupt:
        err.write(f"skin_audit: {args.command} interrupted; no report or output written\n")
        return EXIT_INTERRUPTED
    except Exception:  # a bug of ours, never reported as findings (exit 1) or bad input (exit 2)
        import traceback

        err.write(f"skin_audit: internal error in {args.command} (a skin_audit bug; please report it):\n"
                  f"{traceback.format_exc()}")
        return EXIT_INTERNAL
