# SPDX-License-Identifier: GPL-3.0-or-later
"""Every finding code the audit can report, in one table.

One entry per code: its severity (``"WARNING / INFO"`` where the rule decides between
two), the family of rules that reports it, its title, its rule (the rule of the table in
docs/report-format.md: a test checks codes and severities agree), the advice a report shows,
and where they exist what ``fix`` does about it, the sidebar's short words, and the per-vertex
measure that paints it in the HTML report with its legend.  The code lists of the rule
modules, the report files' help, the panel, the CLI's fixable list and the fixes read it from
here.  The package ships without docs/, so the texts live here.

Families: ``mesh`` (core/audit/mesh_audit.py and its weight, structure and deformation rules),
``rig`` (rig_audit.py, core/skeleton), ``shape`` (the shape checks: shape_checks.py, symmetry
and stray weights in rig_audit.py), ``animation`` and ``animation-data`` (the animation
audit), ``gltf-file`` (core/gltf/checks.py), ``gltf`` (the importer and the engine pairing:
core/engines/gltf_audit.py) and ``babylon`` (core/engines/babylon.py).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The table of finding codes that a report's help points into.
DOC_PATH = "docs/report-format.md"
#: The families, in the order of the docs table.
FAMILIES = ("mesh", "rig", "shape", "animation", "animation-data", "gltf-file", "gltf", "babylon")


@dataclass(frozen=True)
class Code:
    """One finding code and everything said about it."""

    code: str
    #: Severity the audit gives it; 'WARNING / INFO' when the rule decides between two.
    severity: str
    family: str
    title: str
    rule: str
    action: str
    #: What ``skin_audit fix`` does about it ("" : no fix).
    fix: str = ""
    #: The sidebar's words for it ("" : the code with spaces).
    short: str = ""
    #: The MeshAudit.measures entry that paints it in the HTML report, and the picture's legend.
    measure: str = ""
    legend: str = ""

    @property
    def severities(self) -> tuple[str, ...]:
        """Every severity the code can have, highest first."""
        return tuple(s.strip() for s in self.severity.split("/"))

    @property
    def default_level(self) -> str:
        """The highest severity the code can have (SARIF's default level uses it)."""
        return self.severities[0]


def _c(code: str, severity: str, family: str, title: str, rule: str, action: str, **more: str) -> Code:
    return Code(code, severity, family, title, rule, action, **more)


_ENTRIES = (
    _c("unweighted-vertices", "ERROR", "mesh", "Vertices without deform weights",
       "The sum of the vertex's deform weights is at most 1e-4: Blender leaves it in place while the mesh moves.",
       "Weight the vertices (paint them, or copy weights from their neighbours); Blender's glTF exporter binds them "
       "to an added joint that never moves, so engines leave them behind too.",
       fix="give unweighted vertices their nearest weighted neighbours' weights along the mesh",
       short='unweighted',
       legend='|sum of deform weights - 1|'),
    _c("weights-not-normalized", "WARNING / INFO", "mesh", "Weights do not sum to 1",
       "The sum of deform weights differs from 1 by more than the tolerance (1e-4; 'gltf' = 2e-7 per weight). "
       "Blender divides by the sum silently, and so do Blender's glTF exporter, three.js and Babylon: INFO for "
       "such a target; WARNING only when the target keeps the sums as stored ('raw', 'gltf' on a glTF file) and "
       "draws the vertices visibly elsewhere.",
       "Normalise the deform weights (Weights > Normalize All, deform groups only).",
       fix='scale the unlocked deform weights of the listed vertices to sum to 1',
       short='not normalised',
       legend='|sum of deform weights - 1|'),
    _c("too-many-influences", "WARNING", "mesh", "More influences than an engine keeps",
       "More than --max-influences deform weights are non-zero on the vertex; Blender uses them all, Blender's glTF "
       "exporter keeps the 4 largest (renormalised), three.js reads 4, Babylon 8.",
       "Limit the influences to the engine's count, then normalise.",
       fix='keep the N largest deform weights per vertex, then normalise those vertices',
       short='too many bones',
       measure='influences',
       legend='deform weights on the vertex'),
    _c("group-without-bone", "WARNING / INFO", "mesh", "Vertex group names no bone",
       "A vertex group with weights names no bone of the modifier's armature; Blender and its glTF exporter "
       "ignore it. WARNING where it is a vertex's only weight (the vertex stays behind), INFO where every vertex "
       "it weights is weighted to deform bones too.",
       "Rename the group to its bone, merge its weights into a bone, or remove it.",
       fix="remove the vertex group, or merge its weights into a deform bone's group",
       short='group, no bone'),
    _c("weights-on-non-deform-bone", "WARNING", "mesh", "Weights on a non-deform bone",
       "A vertex group with weights names a bone whose Deform is off; Blender ignores the weights, but its glTF "
       "exporter writes every bone as a joint and keeps them, so engines move those vertices.",
       "Turn Deform on for the bone, or move its weights to a deform bone (or remove them).",
       fix="remove the vertex group, or merge its weights into a deform bone's group",
       short='non-deform bone'),
    _c("deform-bone-without-weights", "INFO", "mesh", "Deform bone that moves nothing",
       "A deform bone that no vertex of this mesh uses.",
       "Turn Deform off if the bone is a helper; exporters keep deform bones as joints.",
       fix='turn Deform off on the bones that move no vertex',
       short='bone, no weight'),
    _c("bind-pose-drift", "ERROR / INFO", "mesh", "The mesh moves at the bind pose",
       "At Rest Position the mesh moves (shape keys, modifiers), or with every pose channel cleared "
       "constraints or drivers hold deform bones away from rest. ERROR from 1e-3 of the mesh's size (a pixel "
       "when the mesh fills a 1000-pixel view), INFO below, and INFO where only shape keys that drivers or "
       "keys set move the vertices (a corrective key at work).",
       "Look at the shape keys, modifiers, constraints and drivers the message names.",
       short='bind drift',
       measure='bind_drift',
       legend='displacement at the bind pose'),
    _c("skinning-mismatch", "ERROR", "mesh", "Blender deforms differently from the recomputation",
       "Blender's deformation differs from the independent numpy recomputation beyond float32 tolerance.",
       "Report the file: something in the rig is not what the audit models.",
       short='recompute differs',
       measure='numpy_vs_blender',
       legend='distance between Blender and the recomputation'),
    _c("engine-divergence", "WARNING", "mesh", "An engine would draw the mesh elsewhere",
       "The engine target (--target, default threejs; details.target) places vertices more than 1e-3 x the mesh "
       "size away from Blender at some pose.",
       "Fix the weight findings (influences, normalisation) that cause it; for a glTF file, the file's own findings.",
       short='engine differs',
       measure='engine_divergence',
       legend='distance between the engine and Blender'),
    _c("gltf-weights-not-normalised", "ERROR", "gltf-file", "glTF weights do not sum to 1",
       "Stored weights whose sum is not 1 by the specification's rule (validator ACCESSOR_WEIGHTS_NON_NORMALIZED).",
       "Normalize the weights before export (quantised weights: make the stored integers sum to 255 or 65535)."),
    _c("gltf-joint-out-of-range", "ERROR", "gltf-file", "glTF joint index out of range",
       "A joint index past the skin's joints (validator ACCESSOR_JOINTS_INDEX_OOB).",
       "Re-export the file; the exporter wrote joints its skin does not have."),
    _c("gltf-joint-repeated", "ERROR", "gltf-file", "glTF joint listed twice",
       "A vertex lists the same joint twice with non-zero weight (validator ACCESSOR_JOINTS_INDEX_DUPLICATE).",
       "Merge the repeated influences into one slot."),
    _c("gltf-weight-negative", "ERROR", "gltf-file", "Negative glTF weight",
       "A negative stored weight (validator ACCESSOR_WEIGHTS_NEGATIVE).",
       "Clean the weights (Blender: Weights > Clean) and export again."),
    _c("gltf-joint-on-zero-weight", "INFO", "gltf-file", "glTF joint on an unused slot",
       "A joint other than 0 on a slot with zero weight (validator ACCESSOR_JOINTS_USED_ZERO_WEIGHT); it moves "
       "nothing in any engine. Once per file.",
       "Write joint 0 on unused slots."),
    _c("gltf-rotation-not-unit", "ERROR", "gltf-file", "glTF rotation keys are not unit quaternions",
       "Rotation keyframes whose length misses 1 (validator "
       "ACCESSOR_ANIMATION_SAMPLER_OUTPUT_NON_NORMALIZED_QUATERNION).",
       "Normalise the rotation keys; three.js uses them as stored and the mesh scales."),
    _c("gltf-blender-clamps-weight", "WARNING", "gltf-file", "Blender's importer clamps glTF weights",
       "Stored weights above 1, which Blender's importer clamps.",
       "Normalize the weights in the file; Blender shows this file differently from engines."),
    _c("gltf-blender-merges-sets", "INFO", "gltf-file", "Blender's importer merges glTF influence sets",
       "Several JOINTS/WEIGHTS sets, which Blender's importer merges (three.js reads one).",
       "Keep 4 influences per vertex in one set for engines that read only the first."),
    _c("gltf-blender-changes-weights", "WARNING", "gltf", "Blender shows this glTF file differently from engines",
       "Blender's imported vertex groups differ from the file's stored weights (clamped, merged, all-zero).",
       "Fix the weights in the file; Blender's view of it is not what engines draw."),
    _c("babylon-vertex-vanishes", "ERROR", "babylon", "Vertices vanish in Babylon.js",
       "Vertices with no positive weight among the slots Babylon reads: its CPU skinning makes them NaN and its "
       "shader gives them no screen position, so they vanish with their triangles.",
       "Give every vertex a positive weight on a joint of its skin."),
    _c("babylon-unnormalised-weights-shading", "WARNING / INFO", "babylon",
       "Babylon.js shades unnormalised weights elsewhere",
       "Weights that do not sum to 1: Babylon draws the vertex where Blender does, but its shader lights, fogs and "
       "reflects it at its position times the sum (INFO when only the stored integers' rounding is off).",
       "Normalise the weights before export."),
    _c("babylon-cpu-gpu-differ", "WARNING", "babylon", "Babylon.js CPU and GPU skinning differ",
       "Babylon's CPU path skips weights that are not > 0, its shader uses every slot: negative weights put the "
       "vertex in two places.",
       "Remove negative weights."),
    _c("babylon-shape-keys-ignored-on-cpu", "WARNING", "babylon", "Babylon.js CPU skinning ignores shape keys",
       "Vertices moved by morph targets (shape keys) at the audited time: Babylon's CPU skinning path skins them "
       "without the morph.",
       "Keep Babylon's GPU skinning for this mesh, or bake the shape keys."),
    _c("gltf-not-compared", "INFO", "gltf", "glTF file not compared with Blender",
       "Blender's vertices could not be paired with the file's rows in the importer's order (each primitive's "
       "used rows; the vertex count or the faces differ), or the file's meshes are compressed (Draco) and "
       "skin_audit's reader cannot decode them: the target's drawing of the file is not compared with Blender.",
       "Import with merge vertices off (the default), or audit an uncompressed export, to have the comparison."),
    _c("armature-modifier-missing", "ERROR / WARNING / INFO", "rig",
       "Mesh of the rig that no Armature modifier deforms",
       "A mesh parented to the armature, with a disabled Armature modifier, or with vertex groups named after its "
       "bones, that no enabled Armature modifier deforms: ERROR when its groups weigh deform bones; INFO for an "
       "unparented object sharing its mesh data with a skinned one (a static instance).",
       "Add (or enable) an Armature modifier pointing at the armature, or unparent the mesh if it is a prop."),
    _c("humanoid-bone-missing", "WARNING / INFO", "rig", "A humanoid without a required humanoid bone",
       "The rig maps to a humanoid (at least 10 of VRM 1.0's 15 required bones found by name or hierarchy) but "
       "one of the required bones (hips, spine, head, upper arm, lower arm, hand, upper leg, lower leg, foot) "
       "is not there. WARNING for the unity target (its Humanoid avatar) or a stated --rest-pose; INFO for "
       "targets that map no humanoid (they draw the rig the same).",
       "Add or rename the bone; VRM, Unity's Humanoid and retargeting need every required bone."),
    _c("humanoid-bone-ambiguous", "INFO", "rig", "Two bones could be one humanoid bone",
       "Two bones that are not one chain both read as the same humanoid bone.",
       "Rename one of them so a humanoid mapping can choose."),
    _c("rest-pose", "INFO", "rig", "The humanoid's rest pose",
       "Per limb, the arms' degrees below the horizontal and the legs' out from the vertical at rest, and "
       "whether that is a T-pose (arms within 10 degrees of the horizontal) or an A-pose (45 within 15).",
       "Nothing to do; give --rest-pose t|a to hold the rig to the pipeline's convention."),
    _c("rest-pose-mismatch", "WARNING", "rig", "Not in the rest pose the pipeline wants",
       "--rest-pose (or [audit] rest_pose) names a T-pose or an A-pose, and an arm rests outside it.",
       "Pose the rig into the convention and apply the pose as its rest pose (and rebind the mesh)."),
    _c("joint-budget-exceeded", "WARNING", "rig", "More bones weight the mesh than the target skins at once",
       "The bones weighting the mesh exceed the engine target's documented limit (Unreal: 256 per section "
       "with its default 8-bit bone indices).",
       "Split the mesh, remove helper bones from its weights, or raise the target's limit."),
    _c("skeleton-differs", "INFO", "rig", "A related skeleton that differs",
       "In a run over several files, a rig whose deform skeleton shares most bones with the run's first but "
       "not all: renamed, missing, extra, moved, re-rolled or re-parented bones, each named.",
       "Make the skeletons match before one set of clips drives both."),
    _c("rigid-part", "INFO / WARNING", "rig", "Meshes carried rigidly by bones",
       "Meshes parented to a bone of the armature and not skinned: each moves rigidly with its bone; WARNING for "
       "a target whose import leaves them out of the skeletal mesh (Unreal).",
       "Nothing to fix for most targets; for Unreal skin each part to its bone (one group at weight 1 and an "
       "Armature modifier)."),
    _c("animation-collapse", "WARNING", "animation", "Vertices collapse while an action plays",
       "audit --animation: at some frame of the action, Blender's pose gives vertices a blend whose smallest "
       "singular value is below 0.5 (the worst frame, vertex and bones are named).",
       "Add twist bones or corrective shapes there, spread the weights across the joint, or use Preserve Volume."),
    _c("animation-volume-loss", "WARNING", "animation", "Vertices lose volume while an action plays",
       "audit --animation: at some frame the blend's determinant falls below 0.4.",
       "As for animation-collapse."),
    _c("animation-engine-divergence", "WARNING", "animation", "The engine target draws the clip differently",
       "audit --animation: at some frame the engine target puts vertices farther from Blender's than 1e-3 of the "
       "mesh size (the worst frames are named).",
       "Fix the weights the target treats otherwise (influences, sums, groups of non-deform bones)."),
    _c("animation-clip-divergence", "WARNING", "animation",
       "The engine plays the file's clip differently from Blender's import",
       "audit --animation on a glTF file: at some frame the engine target, interpolating the file's own keys at "
       "frame / fps (three.js: slerp, its cubic spline, STEP held), draws vertices farther than 1e-3 of the mesh "
       "size from Blender's mesh playing the action its importer made of the clip.",
       "Export the clip sampled at every frame, so no engine interpolates between sparse keys."),
    _c("animation-mismatch", "ERROR", "animation", "Blender's mesh differs from the recomputed frame",
       "audit --animation: at a spot-checked frame Blender's evaluated mesh is farther than 2e-5 of the mesh size "
       "from the numpy recomputation of that frame's pose: something animated besides the bones (B-Bone curves, "
       "shape keys, modifiers) changes the mesh, so the action's measures are not Blender's.",
       "Audit that frame with --frame to see what differs."),
    _c("animation-scale-keys", "WARNING / INFO", "animation-data", "Zero, negative or non-uniform scale keys",
       "An action keys a deform bone's scale at zero or below zero (WARNING), or non-uniformly (INFO).",
       "Key a scale near one, or move squash and stretch to dedicated bones."),
    _c("armature-object-keys", "INFO", "animation-data", "The armature object itself is animated",
       "An action keys the armature object's location, rotation or scale.",
       "Key a root bone instead if the motion belongs to the character."),
    _c("animation-euler-flip", "WARNING", "animation-data", "An Euler channel flips between two frames",
       "A bone's rotation_euler channel jumps by more than 180 degrees between consecutive frames.",
       "Graph Editor: Key > Discontinuity (Euler) Filter, or key quaternions."),
    _c("animation-missing-bone", "WARNING", "animation-data", "Channels for bones that do not exist",
       "An action has channels for bones the armature does not have: they move nothing.",
       "Rename the channels (or the bones) so they match, or remove them."),
    _c("animation-helper-keys", "INFO", "animation-data", "Keys on helper bones that move deform bones",
       "An action keys non-deform bones that move deform bones only through constraints or drivers.",
       "Bake the deform bones' motion on export (Blender's glTF exporter samples it)."),
    _c("action-range-beyond-keys", "INFO", "animation-data", "An action plays past its keys",
       "An action's manual frame range runs past its first or last key.",
       "Fit the range to the keys, or key the frames it holds."),
    _c("gltf-animation-time-negative", "ERROR", "gltf-file", "Negative animation key times",
       "glTF input: an animation sampler's key times are below 0 (ACCESSOR_ANIMATION_INPUT_NEGATIVE); runtimes "
       "start a clip at 0 and never show those keys, and Blender's importer puts them on negative frames.",
       "Shift the clip so its first key is at time 0 and export again."),
    _c("gltf-draco-undecodable", "ERROR", "gltf-file", "Draco data no decoder reads",
       "glTF input: a primitive's KHR_draco_mesh_compression data has no Draco mesh header a decoder reads; "
       "the audit reads the uncompressed fallback, engines that decode Draco drop the primitive.",
       "Export again with Draco compression, or without it."),
    _c("gltf-uri-outside-folder", "WARNING", "gltf-file", "A file the asset uses lies outside its folder",
       "glTF input: a buffer or image uri is absolute or climbs out of the asset's folder (NON_RELATIVE_URI for "
       "absolute ones); the asset breaks when its folder is moved or published.",
       "Keep every file beside the .gltf, or in a folder below it, under a relative uri."),
    _c("non-finite-result", "ERROR", "mesh", "The audit computed NaN or infinity",
       "The audit computed NaN or infinity (a bone scaled to zero under Preserve Volume, a NaN vertex...): those "
       "metrics are null and named in details.undefined, never a pass.",
       "Fix the bone scale or the vertex the details name, then audit again."),
    _c("non-finite-weights", "ERROR", "mesh", "NaN or infinite weights",
       "Weights that are NaN or infinite: no skinning can use them.", "Repaint or remove the broken groups."),
    _c("negative-weights", "ERROR", "mesh", "Negative weights",
       "Weights below zero: no skinning can use them.", "Clamp the weights to zero or repaint them."),
    _c("non-finite-positions", "ERROR", "mesh", "NaN or infinite positions",
       "Vertex positions that are NaN or infinite.", "Fix the mesh (or the modifier that produced them)."),
    _c("non-finite-bone-matrices", "ERROR", "mesh", "NaN or infinite bone matrices",
       "Bone matrices that are NaN or infinite.", "Fix the bone (zero length, scale 0, a broken constraint)."),
    _c("multiple-root-bones", "WARNING / INFO", "mesh", "More than one root bone",
       "The deform hierarchy (deform bones only, each under its nearest deform ancestor) has more than one "
       "root; an exporter writing deform bones only writes several skeleton roots. WARNING for the unreal "
       "target (its skeletal-mesh import wants one root bone); INFO for the others (glTF asks only for a common "
       "ancestor node of a skin's joints) and for helper roots.",
       "Parent the roots under one root bone.",
       short='root bones'),
    _c("no-deform-bones", "ERROR", "mesh", "No deform bones",
       "No bone of the armature has Deform on.", "Turn Deform on for the skinning bones."),
    _c("non-uniform-armature-scale", "WARNING", "mesh", "Non-uniform armature scale",
       "The armature object's scale differs between axes; exporters and engines handle it differently.",
       "Fix it (wrench, or `skin_audit fix --code non-uniform-armature-scale`): the scale goes into the rest "
       "pose and the meshes stay in place. Blender's Object > Apply > Scale moves skinned meshes.",
       fix="apply the armature's scale to its rest pose, pose and keys; skinned meshes stay where they are"),
    _c("negative-armature-scale", "ERROR", "mesh", "Negative armature scale",
       "The armature object's scale is negative (mirrored).",
       "Fix it (wrench, or `skin_audit fix --code negative-armature-scale`): the mirror goes into the rest pose "
       "with proper bone frames, and into a mirrored mesh child's data (faces flipped).",
       fix="apply the armature's mirror to its rest pose (proper bone frames), pose and keys; a mirrored mesh child "
           'takes the mirror into its data (faces flipped)'),
    _c("preserve-volume-on", "INFO", "mesh", "Preserve Volume (dual quaternions) is on",
       "The Armature modifier uses dual quaternion skinning; engines use linear blend skinning.",
       "Turn Preserve Volume off to see what an engine will draw.",
       fix='turn Preserve Volume off on the Armature modifier (engines skin with LBS)'),
    _c("bbones-on-deform-bones", "INFO", "mesh", "B-Bones on deform bones",
       "Deform bones with B-Bone segments; exporters bake them to plain bones.",
       "Set segments to 1, or add real twist bones.",
       fix='set B-Bone segments to 1 on deform bones (what exporters bake anyway)'),
    _c("mesh-not-parented-to-armature", "INFO", "mesh", "Mesh not parented to its armature",
       "The skinned mesh's parent is not its armature; Blender deforms it and its glTF exporter writes the skin "
       "all the same, but a pipeline may expect the armature as parent.",
       "Parent the mesh to the armature (keep transform)."),
    _c("not-reproduced", "INFO", "mesh", "A feature the recomputation does not reproduce",
       "B-Bones, envelopes, multi-modifier or topology-changing modifiers: those vertices are not compared.",
       "Nothing to fix; the comparison with Blender skips them."),
    _c("dqs-order-sensitive", "INFO", "mesh", "Dual quaternion result depends on storage order",
       "Preserve Volume vertices whose result depends on Blender's weight storage order; not compared.",
       "Nothing to fix; the comparison with Blender skips them."),
    _c("rest-position-shown", "INFO", "mesh", "The armature is shown at Rest Position",
       "The armature is shown at Rest Position, so the current pose compared with Blender and the engine "
       "targets is the rest; the stress poses, the sweep and its spot checks still pose it.",
       "Switch the armature to Pose Position and audit again to compare the current pose."),
    _c("twist-collapse", "WARNING / INFO", "shape", "Linear blend skinning collapses at a test pose",
       "The smallest singular value of the blended 3x3 drops below 0.5 at a test pose: WARNING when a pose "
       "within 90 degrees or at the rig's own limits does it, INFO when only 180-degree poses do. The data "
       "can be correct: this is the algorithm.",
       "Add twist bones, spread the weights over more of the joint, or use dual quaternions where the engine can.",
       short='collapse',
       measure='collapse',
       legend='collapse: 1 - smallest singular value'),
    _c("volume-loss", "WARNING / INFO", "shape", "Volume lost at a test pose",
       "The determinant of the blended 3x3 drops below 0.4 at a test pose (same rule as twist-collapse).",
       "Add helper or twist bones near the joint, or corrective shapes.",
       short='volume loss',
       measure='volume_loss',
       legend='volume lost: 1 - determinant'),
    _c("sweep-mismatch", "ERROR", "shape", "Blender disagrees with the pose sweep",
       "Blender's own evaluation of a test pose disagrees with the numpy sweep.",
       "Report the file: the sweep does not model something in this rig.",
       short='sweep differs'),
    _c("unpaired-side-bone", "WARNING", "shape", "Side bone without its mirror",
       "A Left/Right bone without its mirror bone by name.", "Add or rename the mirror bone (.L/.R)."),
    _c("mirror-axis-mismatch", "WARNING / INFO", "shape", "Mirrored bones are not mirror images",
       "A mirrored pair's rest frames are not mirror images (angle in details), judged against the rig's own "
       "rule when it has one: WARNING. INFO where the axes mirror but the heads do not (the sides are built "
       "apart; mirrored poses still turn them alike), and for pairs along the mirror axis.",
       "Symmetrize the armature (Armature > Symmetrize) or fix the bone roll."),
    _c("mirror-axis-convention", "INFO", "shape", "The rig mirrors bones its own way",
       "Most pairs share one offset from Blender's mirror image (another tool's mirroring); pairs are judged "
       "against it.",
       "Nothing to fix; noted so the mirror checks can be read.",
       short='mirror axis'),
    _c("surface-area-collapse", "WARNING / INFO", "shape", "Triangles collapse at a test pose",
       "A triangle keeps less than 0.25 of its rest area at a sweep or stress pose; WARNING where a pose within "
       "90 degrees or at the rig's limits does it across a weight-step seam, INFO otherwise.",
       "Smooth the weights across the joint; where Preserve Volume keeps it, add helper bones or correctives.",
       short="area collapse", measure="surface_area_loss",
       legend="area lost: 1 - area ratio of the worst triangle at the vertex"),
    _c("surface-stretch", "WARNING / INFO", "shape", "Triangles stretch at a test pose",
       "A triangle's largest singular value (rest plane to posed) exceeds 2 at a sweep or stress pose; same "
       "severities.",
       "Smooth the weights across the joint (the weight-step fix), or spread the bend over more edges.",
       short="stretch", measure="surface_stretch", legend="stretch - 1 of the worst triangle at the vertex"),
    _c("surface-fold", "WARNING / INFO", "shape", "Faces fold inward at a test pose",
       "A face turns more than 90 degrees from where the bone carrying it turns its rest normal; same severities.",
       "Smooth the weights across the joint, or add a helper bone on the inside of the bend.",
       short="fold"),
    _c("weight-step", "WARNING / INFO", "shape", "Weight steps across an edge",
       "A bone's weight drops by 0.5 or more across an edge shorter than half the limb's thickness, to a bone it "
       "joins; WARNING for a seam of hard steps (0.9 or more along 8 edges or more), INFO below.",
       "Smooth the weights of the region (Fix: Smooth Vertex Weights over the finding's vertices).",
       fix="smooth the unlocked deform weights of the finding's vertices and one ring of edges around them, as "
           "Smooth Vertex Weights does, then normalise those vertices"),
    _c("twist-region-crowded", "WARNING / INFO", "shape", "Too many bones share a twist region",
       "Vertices blend more than 3 bones of one chain with at least 0.1 each; WARNING from 8 vertices on.",
       "Keep two or three bones per vertex along a twist; let twist bones take it in steps.",
       short="candy wrapper"),
    _c("self-intersection", "WARNING / INFO", "shape", "Mesh through itself at a test pose",
       "At a bone's own limit (or a 90-degree bend where it has none) the mesh passes through itself where it "
       "does not at rest, by an exact triangle test; WARNING at the rig's limit when the contact reaches 3 limb "
       "radii from the joint, INFO for crease folds and unlimited turns.",
       "Narrow the bone's limit, move the joint, or widen the blend so the limb folds without entering itself.",
       short="passes through itself"),
    _c("mesh-intersection", "WARNING / INFO", "shape", "Meshes through each other at a test pose",
       "At a bone's own limit (or a 90-degree bend) two meshes pass through each other where they do not at "
       "rest; WARNING at the rig's limit when one follows the turned bone and the other stays behind.",
       "Weight the garment like the body under it (Data Transfer of the weights), or add the missing bone.",
       short="meshes pass through"),
    _c("joint-off-transition", "WARNING / INFO", "shape", "Joint away from its weight transition",
       "Where a joint's parent and child weights hand over, along the bones, is 0.25 bone lengths or more from "
       "the joint and the hand-over is sharp and clear of it (INFO from 0.1, or for a broad blend).",
       "Move the joint to the rotation centre, or the weight transition to the joint.",
       short="joint off its weights"),
    _c("joint-outside-mesh", "WARNING", "shape", "Joint outside the mesh",
       "The winding number of the skin a joint's bones carry is below 0.3 at the joint and the skin is 0.1 "
       "bone lengths away or more.",
       "Move the joint into the limb, at its rotation centre.",
       short="joint outside mesh"),
    _c("chain-roll-inconsistent", "WARNING / INFO", "shape", "Bone rolled against its chain",
       "A bone's roll differs by 45 degrees or more from the bone it continues from (its parent's X carried "
       "along the chain); WARNING where X and Z trade places on a bone with its own rotation limits, INFO "
       "elsewhere (it matters to retargeted or mirrored animation).",
       "Recalculate the roll of the chain (the roll fix) or align it by hand; then check the poses.",
       fix="roll the bones named to the frame of the bone each continues from (heads, tails and meshes stay; "
           "local rotations on them turn about the new axes)",
       short="rolled bone"),
    _c("weight-asymmetry", "WARNING / INFO", "shape", "Weights are not symmetric",
       "A vertex's weights differ from its mirror vertex's mirrored-group weights by more than 0.05: WARNING "
       "from a difference of 0.1 (a tenth of the bend), INFO below.",
       "Mirror the weights from the good side.",
       fix="copy one side's weights to the other through the audit's bone pairs and mirror vertices",
       short='asymmetric',
       measure='asymmetry',
       legend='weight difference to the mirror vertex'),
    _c("mesh-not-symmetric", "INFO", "shape", "Mesh not symmetric: weight symmetry not checked",
       "Too few vertices have a mirror vertex across the symmetry plane.", "Nothing to fix."),
    _c("no-mirrored-bones", "INFO", "shape", "No left/right bone pairs: weight symmetry not checked",
       "The rig has no left/right bone pairs.", "Name side bones .L/.R if the rig is symmetric."),
    _c("stray-weights", "WARNING / INFO", "shape", "Stray weights",
       "Vertices far from their bone compared with the bone's other vertices, or a bone's weighted region split "
       "into islands on one piece of mesh; WARNING where the weight moves its vertex by more than 1% of the "
       "character's size (in armature space) at a stress pose, INFO below. An island painted with its bone's "
       "full weight, or a middle bone's island that mirrors the bone's other piece (two eyes), is not stray.",
       "Remove the stray islands, or weights below a small threshold.",
       fix='remove the stray islands and far weights (or weights below a threshold), then normalise those vertices',
       short='stray',
       measure='stray',
       legend='how far the weight strays'),
)

#: code -> its entry, in the order of the docs table.
CODES: dict[str, Code] = {e.code: e for e in _ENTRIES}
assert len(CODES) == len(_ENTRIES), "a code is listed twice"
assert all(e.family in FAMILIES for e in _ENTRIES), "a code's family is not one of FAMILIES"


def codes_of(*families: str) -> frozenset[str]:
    """The codes the rules of ``families`` report."""
    unknown = set(families) - set(FAMILIES)
    if unknown:
        raise KeyError(f"no family {sorted(unknown)}; families: {', '.join(FAMILIES)}")
    return frozenset(c for c, e in CODES.items() if e.family in families)


#: Every code a fix exists for, with what it does (the panel's tooltip, the CLI's help), in table order.
FIXABLE: dict[str, str] = {c: e.fix for c, e in CODES.items() if e.fix}
