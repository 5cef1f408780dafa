# SPDX-License-Identifier: GPL-3.0-or-later
"""The finding codes a fix exists for (``blender/fix/``), read without Blender by the CLI's
``--help``, the panel's tooltips and the fixes' own dispatch."""

from __future__ import annotations

#: Every code a fix exists for, with what it does (the panel's tooltip, the CLI's help).
FIXABLE: dict[str, str] = {
    "too-many-influences": "keep the N largest deform weights per vertex, then normalise those vertices",
    "weights-not-normalized": "scale the unlocked deform weights of the listed vertices to sum to 1",
    "unweighted-vertices": "give unweighted vertices their nearest weighted neighbours' weights along the mesh",
    "stray-weights": "remove the stray islands and far weights (or weights below a threshold), then normalise "
                     "those vertices",
    "weight-asymmetry": "copy one side's weights to the other through the audit's bone pairs and mirror vertices",
    "group-without-bone": "remove the vertex group, or merge its weights into a deform bone's group",
    "weights-on-non-deform-bone": "remove the vertex group, or merge its weights into a deform bone's group",
    "deform-bone-without-weights": "turn Deform off on the bones that move no vertex",
    "preserve-volume-on": "turn Preserve Volume off on the Armature modifier (engines skin with LBS)",
    "bbones-on-deform-bones": "set B-Bone segments to 1 on deform bones (what exporters bake anyway)",
    "non-uniform-armature-scale": "apply the armature's scale to its rest pose, pose and keys; skinned meshes "
                                  "stay where they are",
    "negative-armature-scale": "apply the armature's mirror to its rest pose (proper bone frames), pose and "
                               "keys; a mirrored mesh child takes the mirror into its data (faces flipped)",
}
