# SPDX-License-Identifier: GPL-3.0-or-later
"""Every tolerance skin_audit uses, in one place, with the reason for each.

numpy work is float64; Blender stores coordinates and weights as float32
(machine epsilon 1.19e-7), so comparisons with Blender are scaled by the
mesh's size and allow a few float32 rounding steps.
"""

from __future__ import annotations

#: Animation keys: a scale key within this of zero is zero; frames within this are the same frame.
SCALE_KEY_ZERO = 1e-6
FRAME_EPSILON = 1e-3

#: Strict core: |sum of weights - 1| allowed (docs/twist-experiment.md). No normalisation.
WEIGHT_SUM = 1e-12

#: Largest absolute matrix entry accepted; bigger values are a units or export bug.
MATRIX_MAGNITUDE = 1e6

#: Affine last row must be (0, 0, 0, 1) to this.
AFFINE_ROW = 1e-12

#: Rigid inverse: |R^T R - I| and |det R - 1| allowed.
ORTHONORMAL = 1e-9

#: The same for matrices Blender stored as float32.
ORTHONORMAL_FLOAT32 = 1e-5

#: Translation-only helper: |R - I| allowed before it refuses.
TRANSLATION_ONLY = 1e-12

#: Bind pose must not move vertices (float64, seed measured 5.55e-17).
BIND_DRIFT_FLOAT64 = 1e-12

#: numpy against closed forms (float64; seed measured ~2.2e-16).
CLOSED_FORM_FLOAT64 = 1e-12

#: The verifier's own float64 recomputation against the stored numpy positions.
VERIFY_NUMPY_RELATIVE = 1e-10

#: Blender (float32) against numpy, relative to the mesh's bounding size.
#: Measured agreement is ~1e-7; 2e-6 allows about sixteen float32 steps.
FLOAT32_RELATIVE = 2e-6

#: Audit of artist rigs: Blender (float32, its own operation order) against the
#: float64 recomputation, relative to the mesh size.  Measured agreement is
#: 1.5e-6 to 1e-5 at a scene size of 3 (research note on armature_deform.cc).
SKINNING_MATCH_RELATIVE = 2e-5

#: Mirrored bone pairs: rest frames may differ from a true mirror image by this
#: angle (degrees) and their heads by this fraction of the mesh size.
MIRROR_ANGLE_DEGREES = 1.0
MIRROR_DISTANCE_RELATIVE = 1e-3

#: Blender's own rule: a vertex whose deform weights sum to <= this stays put
#: (armature_deform.cc, ``contrib > 0.0001f``).
BLENDER_MIN_CONTRIB = 1e-4

#: A triangle is degenerate when its area is below this fraction of the mean
#: bind-pose triangle area (catches float32 collapse at ~1e-8 radius).
DEGENERATE_AREA_RELATIVE = 1e-6

#: Bind mesh check: a triangle must have at least this fraction of the mean area.
BIND_MIN_AREA_RELATIVE = 1e-9


#: Preserve Volume: a bone matrix is treated as a pure rotation (no scale to fold in at the
#: vertex) when its columns are orthonormal to this (float32 storage) and the squared
#: scale deviation is below DQ_SCALE_SQUARED.
DQ_SCALE_SQUARED = 1e-8

#: Weight sums below this make Blender's float32 rounding large (its 1e-4 rule divides by
#: the sum): the recomputation is then compared within TINY_SUM_MATCH_RELATIVE.
TINY_SUM = 1e-2
TINY_SUM_MATCH_RELATIVE = 1e-3

#: Armature scale counts as non-uniform when its axes differ by this fraction of the largest.
NON_UNIFORM_SCALE_RELATIVE = 1e-4

#: A bone's cleared-pose matrix differs from its rest by more than this: the bone moved.
BONE_MOVED = 1e-5

#: Pose sweep: a blended 3x3 equal to identity or to the swept bone's own to this is rigid
#: (exact arithmetic on float64 rotations).
RIGID_BLEND = 1e-9

#: Angles (radians) and degrees treated as zero / as exactly 90 in the sweep.
ANGLE_ZERO = 1e-6
DEGREES_EXACT = 1e-9

#: A measure within this of 1 counts as "keeps its shape" in messages.
UNIT_MEASURE = 1e-6

#: Smallest mesh size used for relative tolerances (a single vertex has size 0).
MIN_MESH_SIZE = 1e-6

#: Guard for divisions by a tolerance or a length that may be zero.
DIVISION_GUARD = 1e-12

#: Weight asymmetry matters from this difference between a vertex's weight and its mirror
#: vertex's: under a mirrored pose the two move apart by that share of the bone's own motion
#: there, a tenth of the bend (9 degrees of a 90-degree elbow); lighter differences, which
#: weight painting and automatic weights leave on every character, are reported at INFO.
ASYMMETRY_VISIBLE = 0.1

#: Bind-pose drift is visible from this fraction of the mesh size: one pixel when the mesh
#: fills a 1000-pixel-high view.  Lighter drift is reported at INFO.
DRIFT_VISIBLE_RELATIVE = 1e-3

#: Stray weights: a vertex is far from its bone beyond STRAY_FAR_FACTOR times the bone's reach
#: (90th-percentile distance) plus this
#: fraction of the mesh size; coincident vertices (seams) are welded within WELD_RELATIVE.
STRAY_FAR_FACTOR = 3.0
STRAY_FAR_MARGIN = 0.05
STRAY_WELD_RELATIVE = 1e-6
#: A stray weight matters when it moves its vertex by more than this fraction of the character's
#: size at one of the standard stress poses (every deform bone bent or twisted by the test-pose
#: angle), against the same vertex without that weight: 1.7 cm on a 1.7 m character, a dent
#: seen at close range.  Lighter bleeding (a 0.01 weight beside its bone) changes nothing visible.
STRAY_VISIBLE_RELATIVE = 1e-2
#: An island painted with its bone's full weight (within this of 1, as stored) is rigged to that
#: bone on purpose (an eye, a button): not stray unless it is far from the bone.
STRAY_FULL_SHARE = 1e-3
#: An island of a middle bone's group that is the mirror image of the group's other piece is
#: rigged that way on purpose (the right eye of an `eyes` bone) when that piece holds at most this
#: many times the island's vertices: two mirrored pieces, not a body with a stray patch.
STRAY_MIRROR_PIECE_RATIO = 2.0
#: ... and when the bone carries the island: its share of some island vertex's weight is at least this.
STRAY_CARRIED_SHARE = 0.5


def float32_tolerance(size: float) -> float:
    """Absolute tolerance for Blender-vs-numpy positions on a mesh of ``size``."""
    return FLOAT32_RELATIVE * max(float(size), 1.0)

# ------------------------------------------------------------ hostile input

#: An object transform whose smallest singular value is below this fraction of its largest
#: collapses an axis below float32 resolution (scale 0 included): it cannot be inverted, so
#: the mesh cannot be taken into armature space and the file is refused, not audited.
SINGULAR_TRANSFORM_RELATIVE = 1e-7

#: An armature scale (largest singular value of its 3x3) outside [1/x, x] is named as a
#: drift cause: Blender composes it in float32 with the mesh's inverse transform and loses
#: the mesh to rounding long before float32 overflows.
EXTREME_SCALE = 1e6

# ------------------------------------------------------------ Babylon.js target

#: Babylon (float32 vertex data and matrices) against the float64 ``babylon`` model, relative
#: to the mesh size: the bar the target is held to. Measured worst 3.0e-7 on the shared samples and variants.
BABYLON_MATCH_RELATIVE = 1e-5

#: A vertex whose weights sum further than this from 1 is lit by Babylon's shader away from
#: where it is drawn. Float32 weights miss 1 by about 2e-7; 2e-3 ignores that and flags any
#: sum a user or exporter left off (byte and short rounding is told apart separately).
BABYLON_WEIGHT_SUM_SLACK = 2e-3

#: Babylon's CPU and GPU positions of a vertex count as the same within this fraction of the
#: mesh size (float32 engine arithmetic, about 1e-7 measured), and so do a shape key's
#: displacements below it.
BABYLON_SAME_POSITION_RELATIVE = 1e-5


# --- Rig audit

#: A bone within this angle (degrees) of the mirror plane's normal lies along the mirror
#: axis: reflection leaves its X and Z axes in place, so Blender's mirror image (flip X) and
#: the same turned half a turn about the bone (flip Z) are both rigid turns of the left bone.
ALONG_MIRROR_AXIS_DEGREES = 5.0

# --- Scale fix

#: A bone's old-to-new frame map ``D = B'^T S B`` counts as diagonal (the bone lies along the
#: scale's axes, or the scale is uniform) when its off-diagonal entries are below this fraction
#: of its largest: float32 rest frames are orthonormal to about 1e-7.
SCALE_FIX_AXIS_ALIGNED_RELATIVE = 1e-5

#: An object scale axis at or below this is zero: no rest pose can take it.
SCALE_FIX_SMALLEST = 1e-8

#: A mirrored mesh child's custom normals may be this far (unit vectors) from the automatic ones,
#: at corners around smooth vertices (closed fans), for the mirror to go into its data: Blender
#: stores them as an angle from the automatic normal and a turn from a fan edge that the face flip
#: changes there, so a posed normal moves by up to about this much (measured: 0.001 off gives
#: 0.0005; equal to the automatic ones 1e-6). Open fans keep any custom normal (CesiumMan, 0.64
#: off at its seams: 1.7e-4). One step of Blender's int16 angle is 1e-4.
SCALE_FIX_CUSTOM_NORMAL_DEVIATION = 5e-4


# ---------------------------------------------------------------- blend work (not accuracy)

#: Below this share of the weights on bones that move, a recomputation copies out those bones'
#: runs and blends only them (the rest add exactly zero); above it, copying costs more than it saves.
BLEND_MOVING_SHARE = 0.7

# --- Skeleton conformance -------------------------------------------------------------------
#: Rest pose: a T-pose holds the arms within T_POSE_DEGREES of the horizontal; an A-pose holds
#: them A_POSE_ARM_DEGREES below it, within A_POSE_DEGREES (artists' A-poses run 30-60 degrees).
T_POSE_DEGREES = 10.0
A_POSE_ARM_DEGREES = 45.0
A_POSE_DEGREES = 15.0
#: Skeletons match across files when each bone's rest head and tail agree within this fraction
#: of the skeleton's size and its roll (the local X axis about the bone) within this angle.
SKELETON_MOVED_RELATIVE = 1e-3
SKELETON_ROLL_DEGREES = 1.0

# ------------------------------------------------------------ surface measures and weight smoothness

#: surface-stretch: a triangle's largest singular value (its longest direction's stretch from the
#: rest triangle's plane to the posed one) above this.  A smooth blend as long as the limb is wide
#: stretches the outer side of a 90-degree bend by 1.41 (closed form, docs/report-format.md); a
#: hard step stretches the triangles across it by the bend's arc over one edge: far beyond 2.
SURFACE_STRETCH = 2.0
#: surface-area-collapse: a triangle keeping less than this fraction of its rest area.  The inner
#: side of a 90-degree bend blended over twice the limb's radius keeps 0.35 (closed form); a
#: quarter is a pinch a rigger sees.
SURFACE_AREA_COLLAPSE = 0.25
#: surface-fold: a face whose posed normal is turned further than 90 degrees from its rest normal
#: carried by the bone holding most of its weight (cosine below this) faces inward: a dent.
SURFACE_FOLD_COSINE = 0.0
#: A rest triangle with an area below this fraction of the mesh's median triangle area is not
#: measured (its ratios are rounding).
SURFACE_MIN_AREA_RELATIVE = 1e-6
#: Deformable triangles the surface measures evaluate at every test pose at most; beyond, an even
#: stride of them plus every triangle across a weight-step seam (what a WARNING can come from).
#: A million-vertex mesh measured whole cost twenty times its audit.
SURFACE_TRIANGLES = 50_000
#: Of those, triangles on B-Bones with segments at most (beyond, an even stride of them plus every
#: one across a weight-step seam): each is blended over its B-Bones' joints at every pose that
#: bends them, about ten times a plain triangle's cost (measured on the Rigify character, whose
#: B-Bones carry 78% of its triangles: measured all, its surface cost 2.3x its audit).
SURFACE_BBONE_TRIANGLES = 16_000
#: weight-step: a bone's weight changes by at least this across one mesh edge inside a blend
#: region (where the bone's weight is neither 0 nor 1 nearby): the edge creases rigidly when the
#: joint bends.  A half step is already a crease; painted blends change by a few hundredths.
WEIGHT_STEP = 0.5
#: ... and the edge is shorter than this fraction of the limb's thickness there (the distance from
#: the edge to the nearer of the two bones): the mesh had room to blend over several edges.  A
#: low-poly joint one edge wide (an edge as long as the limb is thick) blends as smoothly as it can.
WEIGHT_STEP_EDGE_RADIUS = 0.5
#: A WARNING for a seam: steps of at least WEIGHT_STEP_HARD between one pair of bones along at
#: least WEIGHT_STEP_SEAM_EDGES edges (a limb's loop switching bone at once: the hard 0 -> 1 step
#: at a wrist).  A few stepped edges, or softer steps, are INFO: on real rigs they sit where parts
#: meet (eyes on a face, a clavicle's corner) and were not seen to crease.
WEIGHT_STEP_HARD = 0.9
WEIGHT_STEP_SEAM_EDGES = 8
#: twist-region-crowded: a vertex blending more than this many bones that sit along one chain
#: (each the parent of the next) with at least TWIST_CROWD_WEIGHT each: the twist is spread over
#: so many bones that each ring turns differently (candy wrapper).
TWIST_CROWD_BONES = 3
TWIST_CROWD_WEIGHT = 0.1
#: ... counting the chain's bones that point within this many degrees of its deepest one: bones
#: sharing one twist axis (a shoulder, where the spine meets the arm at a right angle, is no twist).
TWIST_CROWD_ANGLE = 30.0
#: ... a WARNING from this many vertices on (a ring of a limb); fewer, where several joints meet, INFO.
TWIST_CROWD_VERTICES = 8
#: Interpenetration at a test pose is a WARNING when the new contact reaches this many times the
#: limb's radius from the joint (interpenetration.py): a forearm into the upper arm, an arm through
#: a sleeve that stays behind.  The inner folds of a bent joint's crease stay within about two.
CONTACT_REACH_RADII = 3.0
#: Two meshes through each other at a test pose are a WARNING when this fraction of the contact's
#: triangle pairs are one the turn carries whole against one it does not move: a sleeve weighted
#: to the upper arm alone while the forearm turns (1.0), not a sleeve weighted like the arm under
#: it whose inner crease folds with the arm's (0.39 on the bent tube of tests/factories/planted_rigs).
CONTACT_APART_SHARE = 0.75

#: A joint's weight transition this many bone lengths from the joint (the length of the bone it
#: lies in) is a WARNING (an elbow a third of the way down the forearm), from JOINT_OFF_INFO INFO.
JOINT_OFF_WARNING = 0.25
JOINT_OFF_INFO = 0.1
#: A joint is outside its limb when the winding number of the skin its bones carry is below this
#: there (about 1 inside, 0 outside) and the nearest vertex is this many bone lengths away.
JOINT_INSIDE_WINDING = 0.3
JOINT_OUTSIDE_LENGTHS = 0.1
#: joint-off-transition is a WARNING only for a hand-over one can point at: the middle half of
#: the blend (the child's share between 0.25 and 0.75) spread over at most this many bone lengths
#: (interquartile range), wholly on one side of the joint and JOINT_OFF_INFO bone lengths clear of
#: it, its median short of this fraction of the bone's length from the far end (vertices beyond
#: the bones pile at the ends).  Measured on the real-rig corpus: broad smooth
#: weights (animals' spines and tails) and hand-overs piled at a bone's end gave 1.0 bone lengths
#: that no pose shows; the misplaced elbow of tests/factories/planted_rigs is 0.29 and sharp.
JOINT_BLEND_SPREAD = 0.25
JOINT_AT_BONE_END = 0.95
#: ... and this many times the limb's radius at the joint (the distance from the joint to the
#: nearest skin its bones carry) away from it: a hand-over within a limb's thickness or so bends
#: the skin much as the joint does (corpus: 0.4 to 2.9 radii; the planted elbow 3.3).
JOINT_OFF_RADII = 3.0
#: chain-roll-inconsistent from this roll between a bone and the bone it continues from (degrees);
#: a WARNING up to 180 minus it (its X and Z trade places with its chain's) on a bone with its own
#: rotation limits (they then hold the wrong axis), INFO otherwise (the rig's poses are unaffected;
#: 84 to 180 degrees on many corpus shoulders, fingers and tails, none with limits);
#: a joint bends (its bend axis is measured) when its bones meet at this angle or more.
ROLL_INCONSISTENT_DEGREES = 45.0
ROLL_BEND_DEGREES = 5.0
#: The contact test's moderate poses (bones without limits, INFO only) are left out when their
#: count times the character's triangles exceeds this: each costs a pass over the triangles' boxes
#: and the blend region's triangles (measured: 16 ms a pose on a 12,600-vertex character, the
#: audit's own time for 60 poses), and a turn the rig does not limit may never be posed.
CONTACT_MODERATE_BUDGET = 2_000_000
