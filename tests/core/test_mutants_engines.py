# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine weight rules and finding severities on hand-sized inputs (hand-computed expectations)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from skin_audit.core.engines.targets import BABYLON, GLTF
from skin_audit.core.engines.weights import engine_weights, prepare_exported
from skin_audit.core.findings import Finding, worst_severity

JOINTS = [[0, 1, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0]]


def test_babylon_divides_a_positive_sum_and_draws_no_vertex_without_weight():
    # Sums 0.5 (drawn, divided by 0.5), 0 (no position).
    weights = [[0.25, 0.25, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0]]
    _, w = engine_weights(JOINTS, weights, BABYLON, set_width=4)
    np.testing.assert_allclose(w[0], [0.5, 0.5, 0.0, 0.0])
    np.testing.assert_allclose(w[2], [1.0, 0.0, 0.0, 0.0])
    assert np.isnan(w[1]).all()


def test_a_stay_runtime_keeps_only_the_vertices_without_weight_at_rest():
    stay_target = replace(GLTF, zero_weight_rule="stay")
    weights = [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.3, 0.7, 0.0, 0.0]]
    prepared = prepare_exported(JOINTS, weights, stay_target)
    assert prepared.stay.tolist() == [False, True, False]


def test_the_worst_severity_and_the_report_entry():
    found = [Finding("a", "INFO", "m"), Finding("b", "WARNING", "m", 3), Finding("c", "INFO", "m")]
    assert worst_severity(found) == "WARNING"
    assert worst_severity([Finding("a", "ERROR", "m"), *found]) == "ERROR"
    assert worst_severity([]) is None
    entry = found[1].to_dict()
    assert entry["code"] == "b" and entry["severity"] == "WARNING" and entry["count"] == 3
