#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Mutation testing of skin_audit/core against the core tier (numpy + pytest, no bpy), with
# mutmut (pinned in requirements-dev.txt; configured in pyproject.toml [tool.mutmut]).
#
#   bash scripts/mutation.sh                      # core/maths and the Armature-modifier model
#   bash scripts/mutation.sh "skin_audit.core.*"  # the whole core (slow: hours on 2 cores)
#   bash scripts/mutation.sh --results            # list the surviving mutants of the last run
#   bash scripts/mutation.sh --sample 15 --seed 30  # a seeded sample of every core module
#                                                 # (scripts/mutation_sample.py; docs/mutation.md)
#
# mutmut works in ./mutants (git-ignored) and remembers finished mutants between runs;
# `.venv/bin/mutmut show NAME` prints a survivor's diff. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
MUTMUT=.venv/bin/mutmut
if [[ "${1:-}" == "--results" ]]; then
    exec "$MUTMUT" results
fi
if [[ "${1:-}" == "--sample" ]]; then
    exec .venv/bin/python scripts/mutation_sample.py "$@"
fi
CHILDREN="${MUTATION_CHILDREN:-2}"
if [[ $# -eq 0 ]]; then
    set -- "skin_audit.core.maths.*" "skin_audit.core.audit.armature_modifier.*"
fi
"$MUTMUT" run --max-children "$CHILDREN" "$@"
# Score: killed / (all mutants that ran); timeouts count as killed, "no tests" as survived.
"$MUTMUT" export-cicd-stats >/dev/null 2>&1 || true
if [[ -f mutants/mutmut-cicd-stats.json ]]; then
    .venv/bin/python - <<'PY'
import json
s = json.load(open("mutants/mutmut-cicd-stats.json"))
killed = s.get("killed", 0) + s.get("timeout", 0)
total = killed + s.get("survived", 0) + s.get("no_tests", 0) + s.get("suspicious", 0)
print(f"mutation score: {killed}/{total} killed ({s})")
PY
fi
