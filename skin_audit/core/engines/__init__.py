# SPDX-License-Identifier: GPL-3.0-or-later
"""Engine targets (numpy only): each a documented model of the path from the data to the screen.

``targets`` names them (:func:`targets.get_target`); ``weights`` gives a target's influences
and deformation on plain arrays; ``gltf_path`` runs a target on a glTF file.
See docs/engines.md for every rule, its source and the test that proves it.
"""
