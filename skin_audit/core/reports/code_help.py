# SPDX-License-Identifier: GPL-3.0-or-later
"""What each finding code means and what to do about it, for the report files.

One entry per code the audit can report.  ``rule`` repeats the rule of the
table in docs/report-format.md (a test checks the codes and default
severities agree with it); ``action`` is the advice a report shows beside it.
The package ships without docs/, so the texts live here.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The table of finding codes that ``help_uri`` points into.
DOC_PATH = "docs/report-format.md"


@dataclass(frozen=True)
class CodeHelp:
    """The documentation of one finding code."""

    code: str
    #: Severity the audit gives it; 'WARNING / INFO' when the rule decides between two.
    severity: str
    title: str
    rule: str
    action: str

    @property
    def default_level(self) -> str:
        """The highest severity the code can have (SARIF's default level uses it)."""
        return self.severity.split("/")[0].strip()


def _h(code: str, severity: str, title: str, rule: str, action: str) -> CodeHelp:
    return CodeHelp(code, severity, title, rule, action)


_ENTRIES = (
    _h("unweighted-vertices", "ERROR", "Vertices without deform weights",
       "The sum of the vertex's deform weights is at most 1e-4: Blender leaves it in place while the mesh moves.",
       "Weight the vertices (paint them, or copy weights from their neighbours); Blender's glTF exporter binds them "
       "to an added joint that never moves, so engines leave them behind too."),
    _h("weights-not-normalized", "WARNING / INFO", "Weights do not sum to 1",
       "The sum of deform weights differs from 1 by more than the tolerance (1e-4; 'gltf' = 2e-7 per weight). "
       "Blender divides by the sum silently, and so do Blender's glTF exporter, three.js and Babylon: INFO for "
       "such a target; WARNING only when the target keeps the sums as stored ('raw', 'gltf' on a glTF file) and "
       "draws the vertices visibly elsewhere.",
       "Normalise the deform weights (Weights > Normalize All, deform groups only)."),
    _h("too-many-influences", "WARNING", "More influences than an engine keeps",
       "More than --max-influences deform weights are non-zero on the vertex; Blender uses them all, Blender's glTF "
       "exporter keeps the 4 largest (renormalised), three.js reads 4, Babylon 8.",
       "Limit the influences to the engine's count, then normalise."),
    _h("group-without-bone", "WARNING", "Vertex group names no bone",
       "A vertex group with weights names no bone of the modifier's armature; Blender ignores it.",
       "Rename the group to its bone, merge its weights into a bone, or remove it."),
    _h("weights-on-non-deform-bone", "WARNING", "Weights on a non-deform bone",
       "A vertex group with weights names a bone whose Deform is off; Blender ignores the weights, but its glTF "
       "exporter writes every bone as a joint and keeps them, so engines move those vertices.",
       "Turn Deform on for the bone, or move its weights to a deform bone (or remove them)."),
    _h("deform-bone-without-weights", "INFO", "Deform bone that moves nothing",
       "A deform bone that no vertex of this mesh uses.",
       "Turn Deform off if the bone is a helper; exporters keep deform bones as joints."),
    _h("bind-pose-drift", "ERROR", "The mesh moves at the bind pose",
       "At Rest Position the mesh moves (shape keys, modifiers), or with every pose channel cleared "
       "constraints or drivers hold deform bones away from rest.",
       "Look at the shape keys, modifiers, constraints and drivers the message names."),
    _h("skinning-mismatch", "ERROR", "Blender deforms differently from the recomputation",
       "Blender's deformation differs from the independent numpy recomputation beyond float32 tolerance.",
       "Report the file: something in the rig is not what the audit models."),
    _h("engine-divergence", "WARNING", "An engine would draw the mesh elsewhere",
       "The engine target (--target, default threejs; details.target) places vertices more than 1e-3 x the mesh "
       "size away from Blender at some pose.",
       "Fix the weight findings (influences, normalisation) that cause it; for a glTF file, the file's own findings."),
    _h("gltf-weights-not-normalised", "ERROR", "glTF weights do not sum to 1",
       "Stored weights whose sum is not 1 by the specification's rule (validator ACCESSOR_WEIGHTS_NON_NORMALIZED).",
       "Normalize the weights before export (quantised weights: make the stored integers sum to 255 or 65535)."),
    _h("gltf-joint-out-of-range", "ERROR", "glTF joint index out of range",
       "A joint index past the skin's joints (validator ACCESSOR_JOINTS_INDEX_OOB).",
       "Re-export the file; the exporter wrote joints its skin does not have."),
    _h("gltf-joint-repeated", "ERROR", "glTF joint listed twice",
       "A vertex lists the same joint twice with non-zero weight (validator ACCESSOR_JOINTS_INDEX_DUPLICATE).",
       "Merge the repeated influences into one slot."),
    _h("gltf-weight-negative", "ERROR", "Negative glTF weight",
       "A negative stored weight (validator ACCESSOR_WEIGHTS_NEGATIVE).",
       "Clean the weights (Blender: Weights > Clean) and export again."),
    _h("gltf-joint-on-zero-weight", "INFO", "glTF joint on an unused slot",
       "A joint other than 0 on a slot with zero weight (validator ACCESSOR_JOINTS_USED_ZERO_WEIGHT); it moves "
       "nothing in any engine. Once per file.",
       "Write joint 0 on unused slots."),
    _h("gltf-rotation-not-unit", "ERROR", "glTF rotation keys are not unit quaternions",
       "Rotation keyframes whose length misses 1 (validator "
       "ACCESSOR_ANIMATION_SAMPLER_OUTPUT_NON_NORMALIZED_QUATERNION).",
       "Normalise the rotation keys; three.js uses them as stored and the mesh scales."),
    _h("gltf-blender-clamps-weight", "WARNING", "Blender's importer clamps glTF weights",
       "Stored weights above 1, which Blender's importer clamps.",
       "Normalize the weights in the file; Blender shows this file differently from engines."),
    _h("gltf-blender-merges-sets", "INFO", "Blender's importer merges glTF influence sets",
       "Several JOINTS/WEIGHTS sets, which Blender's importer merges (three.js reads one).",
       "Keep 4 influences per vertex in one set for engines that read only the first."),
    _h("gltf-blender-changes-weights", "WARNING", "Blender shows this glTF file differently from engines",
       "Blender's imported vertex groups differ from the file's stored weights (clamped, merged, all-zero).",
       "Fix the weights in the file; Blender's view of it is not what engines draw."),
    _h("babylon-vertex-vanishes", "ERROR", "Vertices vanish in Babylon.js",
       "Vertices with no positive weight among the slots Babylon reads: its CPU skinning makes them NaN and its "
       "shader gives them no screen position, so they vanish with their triangles.",
       "Give every vertex a positive weight on a joint of its skin."),
    _h("babylon-unnormalised-weights-shading", "WARNING / INFO", "Babylon.js shades unnormalised weights elsewhere",
       "Weights that do not sum to 1: Babylon draws the vertex where Blender does, but its shader lights, fogs and "
       "reflects it at its position times the sum (INFO when only the stored integers' rounding is off).",
       "Normalise the weights before export."),
    _h("babylon-cpu-gpu-differ", "WARNING", "Babylon.js CPU and GPU skinning differ",
       "Babylon's CPU path skips weights that are not > 0, its shader uses every slot: negative weights put the "
       "vertex in two places.",
       "Remove negative weights."),
    _h("babylon-shape-keys-ignored-on-cpu", "WARNING", "Babylon.js CPU skinning ignores shape keys",
       "Vertices moved by morph targets (shape keys) at the audited time: Babylon's CPU skinning path skins them "
       "without the morph.",
       "Keep Babylon's GPU skinning for this mesh, or bake the shape keys."),
    _h("gltf-not-compared", "INFO", "glTF file not compared with Blender",
       "Blender's vertices could not be paired with the file's rows in the importer's order (each primitive's "
       "used rows; the vertex count or the faces differ), or the file's meshes are compressed (Draco) and "
       "skin_audit's reader cannot decode them: the target's drawing of the file is not compared with Blender.",
       "Import with merge vertices off (the default), or audit an uncompressed export, to have the comparison."),
    _h("armature-modifier-missing", "ERROR / WARNING / INFO", "Mesh of the rig that no Armature modifier deforms",
       "A mesh parented to the armature, with a disabled Armature modifier, or with vertex groups named after its "
       "bones, that no enabled Armature modifier deforms: ERROR when its groups weigh deform bones; INFO for an "
       "unparented object sharing its mesh data with a skinned one (a static instance).",
       "Add (or enable) an Armature modifier pointing at the armature, or unparent the mesh if it is a prop."),
    _h("humanoid-bone-missing", "WARNING", "A humanoid without a required humanoid bone",
       "The rig maps to a humanoid (at least 10 of VRM 1.0's 15 required bones found by name or hierarchy) but "
       "one of the required bones (hips, spine, head, upper arm, lower arm, hand, upper leg, lower leg, foot) "
       "is not there.",
       "Add or rename the bone; VRM, Unity's Humanoid and retargeting need every required bone."),
    _h("humanoid-bone-ambiguous", "INFO", "Two bones could be one humanoid bone",
       "Two bones that are not one chain both read as the same humanoid bone.",
       "Rename one of them so a humanoid mapping can choose."),
    _h("rest-pose", "INFO", "The humanoid's rest pose",
       "Per limb, the arms' degrees below the horizontal and the legs' out from the vertical at rest, and "
       "whether that is a T-pose (arms within 10 degrees of the horizontal) or an A-pose (45 within 15).",
       "Nothing to do; give --rest-pose t|a to hold the rig to the pipeline's convention."),
    _h("rest-pose-mismatch", "WARNING", "Not in the rest pose the pipeline wants",
       "--rest-pose (or [audit] rest_pose) names a T-pose or an A-pose, and an arm rests outside it.",
       "Pose the rig into the convention and apply the pose as its rest pose (and rebind the mesh)."),
    _h("joint-budget-exceeded", "WARNING", "More bones weight the mesh than the target skins at once",
       "The bones weighting the mesh exceed the engine target's documented limit (Unreal: 256 per section "
       "with its default 8-bit bone indices).",
       "Split the mesh, remove helper bones from its weights, or raise the target's limit."),
    _h("skeleton-differs", "INFO", "A related skeleton that differs",
       "In a run over several files, a rig whose deform skeleton shares most bones with the run's first but "
       "not all: renamed, missing, extra, moved, re-rolled or re-parented bones, each named.",
       "Make the skeletons match before one set of clips drives both."),
    _h("rigid-part", "INFO / WARNING", "Meshes carried rigidly by bones",
       "Meshes parented to a bone of the armature and not skinned: each moves rigidly with its bone; WARNING for "
       "a target whose import leaves them out of the skeletal mesh (Unreal).",
       "Nothing to fix for most targets; for Unreal skin each part to its bone (one group at weight 1 and an "
       "Armature modifier)."),
    _h("animation-collapse", "WARNING", "Vertices collapse while an action plays",
       "audit --animation: at some frame of the action, Blender's pose gives vertices a blend whose smallest "
       "singular value is below 0.5 (the worst frame, vertex and bones are named).",
       "Add twist bones or corrective shapes there, spread the weights across the joint, or use Preserve Volume."),
    _h("animation-volume-loss", "WARNING", "Vertices lose volume while an action plays",
       "audit --animation: at some frame the blend's determinant falls below 0.4.",
       "As for animation-collapse."),
    _h("animation-engine-divergence", "WARNING", "The engine target draws the clip differently",
       "audit --animation: at some frame the engine target puts vertices farther from Blender's than 1e-3 of the "
       "mesh size (the worst frames are named).",
       "Fix the weights the target treats otherwise (influences, sums, groups of non-deform bones)."),
    _h("animation-mismatch", "ERROR", "Blender's mesh differs from the recomputed frame",
       "audit --animation: at a spot-checked frame Blender's evaluated mesh is farther than 2e-5 of the mesh size "
       "from the numpy recomputation of that frame's pose: something animated besides the bones (B-Bone curves, "
       "shape keys, modifiers) changes the mesh, so the action's measures are not Blender's.",
       "Audit that frame with --frame to see what differs."),
    _h("animation-scale-keys", "WARNING / INFO", "Zero, negative or non-uniform scale keys",
       "An action keys a deform bone's scale at zero or below zero (WARNING), or non-uniformly (INFO).",
       "Key a scale near one, or move squash and stretch to dedicated bones."),
    _h("armature-object-keys", "INFO", "The armature object itself is animated",
       "An action keys the armature object's location, rotation or scale.",
       "Key a root bone instead if the motion belongs to the character."),
    _h("animation-euler-flip", "WARNING", "An Euler channel flips between two frames",
       "A bone's rotation_euler channel jumps by more than 180 degrees between consecutive frames.",
       "Graph Editor: Key > Discontinuity (Euler) Filter, or key quaternions."),
    _h("animation-missing-bone", "WARNING", "Channels for bones that do not exist",
       "An action has channels for bones the armature does not have: they move nothing.",
       "Rename the channels (or the bones) so they match, or remove them."),
    _h("animation-helper-keys", "INFO", "Keys on helper bones that move deform bones",
       "An action keys non-deform bones that move deform bones only through constraints or drivers.",
       "Bake the deform bones' motion on export (Blender's glTF exporter samples it)."),
    _h("action-range-beyond-keys", "INFO", "An action plays past its keys",
       "An action's manual frame range runs past its first or last key.",
       "Fit the range to the keys, or key the frames it holds."),
    _h("gltf-animation-time-negative", "ERROR", "Negative animation key times",
       "glTF input: an animation sampler's key times are below 0 (ACCESSOR_ANIMATION_INPUT_NEGATIVE); runtimes "
       "start a clip at 0 and never show those keys, and Blender's importer puts them on negative frames.",
       "Shift the clip so its first key is at time 0 and export again."),
    _h("gltf-draco-undecodable", "ERROR", "Draco data no decoder reads",
       "glTF input: a primitive's KHR_draco_mesh_compression data has no Draco mesh header a decoder reads; "
       "the audit reads the uncompressed fallback, engines that decode Draco drop the primitive.",
       "Export again with Draco compression, or without it."),
    _h("gltf-uri-outside-folder", "WARNING", "A file the asset uses lies outside its folder",
       "glTF input: a buffer or image uri is absolute or climbs out of the asset's folder (NON_RELATIVE_URI for "
       "absolute ones); the asset breaks when its folder is moved or published.",
       "Keep every file beside the .gltf, or in a folder below it, under a relative uri."),
    _h("non-finite-result", "ERROR", "The audit computed NaN or infinity",
       "The audit computed NaN or infinity (a bone scaled to zero under Preserve Volume, a NaN vertex...): those "
       "metrics are null and named in details.undefined, never a pass.",
       "Fix the bone scale or the vertex the details name, then audit again."),
    _h("non-finite-weights", "ERROR", "NaN or infinite weights",
       "Weights that are NaN or infinite: no skinning can use them.", "Repaint or remove the broken groups."),
    _h("negative-weights", "ERROR", "Negative weights",
       "Weights below zero: no skinning can use them.", "Clamp the weights to zero or repaint them."),
    _h("non-finite-positions", "ERROR", "NaN or infinite positions",
       "Vertex positions that are NaN or infinite.", "Fix the mesh (or the modifier that produced them)."),
    _h("non-finite-bone-matrices", "ERROR", "NaN or infinite bone matrices",
       "Bone matrices that are NaN or infinite.", "Fix the bone (zero length, scale 0, a broken constraint)."),
    _h("multiple-root-bones", "WARNING / INFO", "More than one root bone",
       "The deform hierarchy (deform bones only, each under its nearest deform ancestor) has more than one "
       "root; an exporter writing deform bones only writes several skeleton roots, which some importers refuse "
       "(Unreal's skeletal-mesh import wants one root bone).",
       "Parent the roots under one root bone."),
    _h("no-deform-bones", "ERROR", "No deform bones",
       "No bone of the armature has Deform on.", "Turn Deform on for the skinning bones."),
    _h("non-uniform-armature-scale", "WARNING", "Non-uniform armature scale",
       "The armature object's scale differs between axes; exporters and engines handle it differently.",
       "Fix it (wrench, or `skin_audit fix --code non-uniform-armature-scale`): the scale goes into the rest "
       "pose and the meshes stay in place. Blender's Object > Apply > Scale moves skinned meshes."),
    _h("negative-armature-scale", "ERROR", "Negative armature scale",
       "The armature object's scale is negative (mirrored).",
       "Fix it (wrench, or `skin_audit fix --code negative-armature-scale`): the mirror goes into the rest pose "
       "with proper bone frames, and into a mirrored mesh child's data (faces flipped)."),
    _h("preserve-volume-on", "INFO", "Preserve Volume (dual quaternions) is on",
       "The Armature modifier uses dual quaternion skinning; engines use linear blend skinning.",
       "Turn Preserve Volume off to see what an engine will draw."),
    _h("bbones-on-deform-bones", "INFO", "B-Bones on deform bones",
       "Deform bones with B-Bone segments; exporters bake them to plain bones.",
       "Set segments to 1, or add real twist bones."),
    _h("mesh-not-parented-to-armature", "WARNING", "Mesh not parented to its armature",
       "The skinned mesh's parent is not its armature; exporters expect the armature as parent.",
       "Parent the mesh to the armature (keep transform)."),
    _h("not-reproduced", "INFO", "A feature the recomputation does not reproduce",
       "B-Bones, envelopes, multi-modifier or topology-changing modifiers: those vertices are not compared.",
       "Nothing to fix; the comparison with Blender skips them."),
    _h("dqs-order-sensitive", "INFO", "Dual quaternion result depends on storage order",
       "Preserve Volume vertices whose result depends on Blender's weight storage order; not compared.",
       "Nothing to fix; the comparison with Blender skips them."),
    _h("rest-position-shown", "INFO", "The armature is shown at Rest Position",
       "The armature is shown at Rest Position, so the current pose compared with Blender and the engine "
       "targets is the rest; the stress poses, the sweep and its spot checks still pose it.",
       "Switch the armature to Pose Position and audit again to compare the current pose."),
    _h("twist-collapse", "WARNING / INFO", "Linear blend skinning collapses at a test pose",
       "The smallest singular value of the blended 3x3 drops below 0.5 at a test pose: WARNING when a pose "
       "within 90 degrees or at the rig's own limits does it, INFO when only 180-degree poses do. The data "
       "can be correct: this is the algorithm.",
       "Add twist bones, spread the weights over more of the joint, or use dual quaternions where the engine can."),
    _h("volume-loss", "WARNING / INFO", "Volume lost at a test pose",
       "The determinant of the blended 3x3 drops below 0.4 at a test pose (same rule as twist-collapse).",
       "Add helper or twist bones near the joint, or corrective shapes."),
    _h("sweep-mismatch", "ERROR", "Blender disagrees with the pose sweep",
       "Blender's own evaluation of a test pose disagrees with the numpy sweep.",
       "Report the file: the sweep does not model something in this rig."),
    _h("unpaired-side-bone", "WARNING", "Side bone without its mirror",
       "A Left/Right bone without its mirror bone by name.", "Add or rename the mirror bone (.L/.R)."),
    _h("mirror-axis-mismatch", "WARNING / INFO", "Mirrored bones are not mirror images",
       "A mirrored pair's rest frames are not mirror images (angle in details), judged against the rig's own "
       "rule when it has one.",
       "Symmetrize the armature (Armature > Symmetrize) or fix the bone roll."),
    _h("mirror-axis-convention", "INFO", "The rig mirrors bones its own way",
       "Most pairs share one offset from Blender's mirror image (another tool's mirroring); pairs are judged "
       "against it.",
       "Nothing to fix; noted so the mirror checks can be read."),
    _h("weight-asymmetry", "WARNING", "Weights are not symmetric",
       "A vertex's weights differ from its mirror vertex's mirrored-group weights by more than 0.05.",
       "Mirror the weights from the good side."),
    _h("mesh-not-symmetric", "INFO", "Mesh not symmetric: weight symmetry not checked",
       "Too few vertices have a mirror vertex across the symmetry plane.", "Nothing to fix."),
    _h("no-mirrored-bones", "INFO", "No left/right bone pairs: weight symmetry not checked",
       "The rig has no left/right bone pairs.", "Name side bones .L/.R if the rig is symmetric."),
    _h("stray-weights", "WARNING / INFO", "Stray weights",
       "Vertices far from their bone compared with the bone's other vertices, or a bone's weighted region split "
       "into islands on one piece of mesh; WARNING where the weight moves its vertex by more than 1% of the "
       "character's size at a stress pose, INFO below.",
       "Remove the stray islands, or weights below a small threshold."),
    _h("self-intersection", "WARNING / INFO", "Mesh through itself at a test pose",
       "At a bone's own limit (or a 90-degree bend where it has none) the mesh passes through itself where it "
       "does not at rest, by an exact triangle test; WARNING at the rig's limit when the contact reaches 3 limb "
       "radii from the joint, INFO for crease folds and unlimited turns.",
       "Narrow the bone's limit, move the joint, or widen the blend so the limb folds without entering itself."),
    _h("mesh-intersection", "WARNING / INFO", "Meshes through each other at a test pose",
       "At a bone's own limit (or a 90-degree bend) two meshes pass through each other where they do not at "
       "rest; WARNING at the rig's limit when one follows the turned bone and the other stays behind.",
       "Weight the garment like the body under it (Data Transfer of the weights), or add the missing bone."),
    _h("joint-off-transition", "WARNING / INFO", "Joint away from its weight transition",
       "Where a joint's parent and child weights hand over, along the bones, is 0.25 bone lengths or more from "
       "the joint and the hand-over is sharp and clear of it (INFO from 0.1, or for a broad blend).",
       "Move the joint to the rotation centre, or the weight transition to the joint."),
    _h("joint-outside-mesh", "WARNING", "Joint outside the mesh",
       "The winding number of the skin a joint's bones carry is below 0.3 at the joint and the skin is 0.1 "
       "bone lengths away or more.",
       "Move the joint into the limb, at its rotation centre."),
    _h("chain-roll-inconsistent", "WARNING / INFO", "Bone rolled against its chain",
       "A bone's roll differs by 45 degrees or more from the bone it continues from (its parent's X carried "
       "along the chain); WARNING where X and Z trade places on a bone with its own rotation limits, INFO "
       "elsewhere (it matters to retargeted or mirrored animation).",
       "Recalculate the roll of the chain (the roll fix) or align it by hand; then check the poses."),
)

#: code -> its help, in the order of the docs table.
CODE_HELP: dict[str, CodeHelp] = {e.code: e for e in _ENTRIES}


def code_anchor(code: str) -> str:
    """The HTML anchor of a code's row in docs/report-format.md (the code itself)."""
    return code


def help_for(code: str) -> CodeHelp:
    """The help of ``code``; an unknown code (a newer audit) gets a neutral entry, not an error."""
    found = CODE_HELP.get(code)
    if found is not None:
        return found
    return CodeHelp(code, "WARNING", code, f"See {DOC_PATH} for '{code}'.", "")
