# SPDX-License-Identifier: GPL-3.0-or-later
"""Named engine targets: each a documented model of the path from the data to the screen.

A target is the runtime's rules for reading influences and transforms.  For a .blend
source the exporter (Blender's glTF exporter, :data:`BLENDER_GLTF_EXPORTER`) comes first;
for a glTF file the runtime reads the file itself.  ``verified`` is True only for targets
whose rules a test proves by running the real program (tests/engines); docs/engines.md
lists each rule with its source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..errors import InputError
from ..findings import Finding
from ..gltf.animation import InterpolationRule
from ..gltf.document import GltfDocument
from ..gltf.scene import RotationRule
from .babylon import babylon_gltf_positions

#: ``"slots"``: the first N columns as stored; ``"largest"``: the N largest weights.
Selection = Literal["slots", "largest"]
#: ``"none"``: weights as stored; ``"sum"``: divide by their sum; ``"abs_sum"``: divide by
#: the sum of absolute values (three.js ``Vector4.manhattanLength``).
Normalisation = Literal["none", "sum", "abs_sum"]
#: What a vertex whose (kept) weights are all zero becomes: ``"collapse"`` (LBS with zero
#: weights sends it to the origin of skinning space), ``"first_slot"`` (weight 1 on its first
#: slot's joint, three.js), ``"stay"`` (left at its rest position), ``"vanish"`` (no position:
#: NaN, for a sum <= 0 too; Babylon.js).
ZeroWeightRule = Literal["collapse", "first_slot", "stay", "vanish"]
#: What a target says about a glTF file at a time of a clip, beyond its positions (Babylon's
#: vanishing vertices, shading and CPU/GPU paths): ``(document, clip, time) -> findings``.
FileFindings = Callable[[GltfDocument, "str | int | None", "float | None"], list[Finding]]


@dataclass(frozen=True)
class ExporterModel:
    """An exporter between a .blend and the runtime (its default settings)."""

    name: str
    #: Influences kept per vertex, largest first.
    max_influences: int
    #: Weights at or below this are dropped before anything else.
    min_weight: float
    renormalises: bool
    #: A vertex left with no influence is bound to an added joint that never moves.
    neutral_joint_for_unweighted: bool
    flattens_bbones: bool
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Target:
    """One engine's rules, from stored influences to drawn positions."""

    name: str
    description: str
    #: Influences per vertex the runtime keeps (None: all).
    max_influences: int | None
    #: JOINTS_n/WEIGHTS_n sets read from a glTF file (None: all).
    reads_sets: int | None
    selection: Selection
    normalisation: Normalisation
    zero_weight_rule: ZeroWeightRule
    #: Weights below this are dropped before renormalising (Unity's "Max Bone Weight"-style cut).
    min_weight: float
    #: Normalised integer weights are written back into their integer type after normalising.
    requantises: bool
    interpolation: InterpolationRule
    rotation: RotationRule
    #: Proven by a test that runs the real program (see docs/engines.md).
    verified: bool
    exporter: ExporterModel | None
    sources: tuple[str, ...]
    #: How it divides weights by their sum, in a sentence ("" : "<name> divides them by their sum").
    normalised_how: str = ""
    #: Its influence count is the audit's ``--max-influences`` (the historical strict model).
    influences_from_options: bool = False
    #: Its own findings about a glTF file (None: it has none).
    file_findings: FileFindings | None = None
    #: What its import does with a mesh parented to a bone ("": it keeps it as a rigid part).
    drops_bone_children: str = ""
    #: Why its import wants one skeleton root ("": several deform roots draw the same).
    wants_one_root: str = ""
    #: It maps a humanoid (an avatar), so every required humanoid bone must be there.
    maps_humanoid: bool = False

    @property
    def normalises(self) -> bool:
        return self.normalisation != "none"

    def how_normalised(self) -> str:
        """How it divides a vertex's weights by their sum, in words."""
        return self.normalised_how or f"{self.name} divides them by their sum"


def _babylon_file_findings(doc: GltfDocument, clip: str | int | None, time: float | None) -> list[Finding]:
    return [f for b in babylon_gltf_positions(doc, clip, time) for f in b.findings]


BLENDER_GLTF_EXPORTER = ExporterModel(
    name="blender-gltf",
    max_influences=4,
    min_weight=1e-4,
    renormalises=True,
    neutral_joint_for_unweighted=True,
    flattens_bbones=True,
    sources=(
        "io_scene_gltf2 (bundled with Blender 5.0.1) __init__.py: export_influence_nb default 4, "
        "export_all_influences default False",
        "blender/exp/primitive_extract.py __get_bone_data: weights <= 1e-4 and groups naming no joint dropped, "
        "sorted by weight (largest first); a vertex with none left gets weight 1 on an added neutral joint",
        "blender/exp/primitive_attributes.py: slots past export_influence_nb zeroed, then every vertex divided "
        "by its sum (float32)",
        "SPEC 8: measured on Blender 5.0.1, one WEIGHTS set, <= 4 weights, sums 1 within 5e-8, B-Bones flattened",
    ),
)

RAW = Target(
    name="raw",
    description="weights as stored, the 4 largest kept, no renormalising; unweighted vertices collapse",
    max_influences=4,
    reads_sets=None,
    selection="largest",
    normalisation="none",
    zero_weight_rule="collapse",
    min_weight=0.0,
    requantises=False,
    interpolation="spec",
    rotation="normalise",
    verified=False,
    exporter=None,
    sources=("skin_audit's historical model: strict LBS on the stored weights",),
    influences_from_options=True,
)

GLTF = Target(
    name="gltf",
    description="what glTF 2.0 requires of any runtime: every set, weights used as stored, LBS",
    max_influences=None,
    reads_sets=None,
    selection="slots",
    normalisation="none",
    zero_weight_rule="collapse",
    min_weight=0.0,
    requantises=False,
    interpolation="spec",
    rotation="normalise",
    verified=False,
    exporter=BLENDER_GLTF_EXPORTER,
    sources=(
        "glTF 2.0 3.7.3.1 (JOINTS_n/WEIGHTS_n, weights normalised to a linear sum of one, all sets used)",
        "glTF 2.0 3.7.3.3 (joint matrix = world(joint) @ inverseBindMatrix; mesh node transform ignored)",
        "glTF 2.0 Appendix C (slerp on the shorter arc, cubic Hermite, normalised rotations)",
    ),
)

THREEJS = Target(
    name="threejs",
    description="three.js r187 GLTFLoader + SkinnedMesh (CPU path getVertexPosition)",
    max_influences=4,
    reads_sets=1,
    selection="slots",
    normalisation="abs_sum",
    zero_weight_rule="first_slot",
    min_weight=0.0,
    requantises=True,
    interpolation="threejs",
    rotation="as_stored",
    verified=True,
    exporter=BLENDER_GLTF_EXPORTER,
    sources=(
        "GLTFLoader.js ATTRIBUTES: only WEIGHTS_0 -> skinWeight, JOINTS_0 -> skinIndex",
        "GLTFLoader.js loadMesh: mesh.normalizeSkinWeights() on every SkinnedMesh",
        "SkinnedMesh.normalizeSkinWeights: scale = 1 / manhattanLength; Infinity -> (1, 0, 0, 0); "
        "setXYZW re-quantises normalised integer attributes (MathUtils.normalize: Math.round)",
        "SkinnedMesh.applyBoneTransform: slots with weight 0 skipped; GLTFLoader binds with an identity "
        "bindMatrix and AttachedBindMode sets bindMatrixInverse = matrixWorld^-1, so the mesh node's "
        "transform cancels as 3.7.3.3 requires",
        "Quaternion.slerpFlat, GLTFCubicSplineQuaternionInterpolant, Matrix4.compose (quaternion as stored)",
    ),
    normalised_how="three.js divides them by their sum at load (normalizeSkinWeights)",
)

UNITY = Target(
    name="unity",
    description="Unity: 4 largest influences (Quality 'Skin Weights' default), renormalised at import",
    max_influences=4,
    reads_sets=None,
    selection="largest",
    normalisation="sum",
    zero_weight_rule="collapse",
    min_weight=0.001,
    requantises=False,
    interpolation="spec",
    rotation="normalise",
    verified=False,
    exporter=BLENDER_GLTF_EXPORTER,
    sources=(
        "Unity Manual, Model Import Settings (Rig tab): Skin Weights 'Standard (4 Bones)', Max Bone Weight 0.001, "
        "weights renormalised",
        "Unity Scripting API QualitySettings.skinWeights (default FourBones)",
        "Unity Manual, Humanoid Avatars: the required bones of the Humanoid rig",
    ),
    maps_humanoid=True,
)

UNREAL = Target(
    name="unreal",
    description="Unreal Engine: up to 8 influences (12 with unlimited), renormalised at import",
    max_influences=8,
    reads_sets=None,
    selection="largest",
    normalisation="sum",
    zero_weight_rule="collapse",
    min_weight=0.0,
    requantises=False,
    interpolation="spec",
    rotation="normalise",
    verified=False,
    exporter=BLENDER_GLTF_EXPORTER,
    sources=(
        "Unreal Engine docs, Skeletal Mesh import: MAX_TOTAL_INFLUENCES 8 (12 with unlimited influences), "
        "weights renormalised",
        "Blender for Unreal Engine add-on, its checker: one root bone; meshes parented to bones are not skinned",
    ),
    drops_bone_children=(
        "Unreal's skeletal-mesh import takes only skinned meshes: a mesh parented to a bone is not part of the "
        "skeletal mesh (the Blender for Unreal Engine add-on's checker flags it); skin it to its bone (one "
        "vertex group at weight 1 and an Armature modifier) or attach it in Unreal to a socket"),
    wants_one_root=(
        "Unreal's skeletal-mesh import wants one root bone: it adds a root of its own above several (the "
        "Blender for Unreal Engine add-on's checker asks for one), so parent the roots under one bone"),
)

GODOT4 = Target(
    name="godot",
    description="Godot 4: 4 influences per vertex (8 with the 8-bone flag), renormalised",
    max_influences=4,
    reads_sets=None,
    selection="largest",
    normalisation="sum",
    zero_weight_rule="collapse",
    min_weight=0.0,
    requantises=False,
    interpolation="spec",
    rotation="normalise",
    verified=False,
    exporter=BLENDER_GLTF_EXPORTER,
    sources=(
        "Godot docs, Mesh.ARRAY_FLAG_USE_8_BONE_WEIGHTS (4 by default, 8 with the flag); GLTFDocument "
        "reads JOINTS_1/WEIGHTS_1 into the 8-bone layout",
    ),
)

GODOT8 = Target(
    name="godot8",
    description="Godot 4 with 8 bone weights",
    max_influences=8,
    reads_sets=2,
    selection="largest",
    normalisation="sum",
    zero_weight_rule="collapse",
    min_weight=0.0,
    requantises=False,
    interpolation="spec",
    rotation="normalise",
    verified=False,
    exporter=BLENDER_GLTF_EXPORTER,
    sources=GODOT4.sources,
)

BABYLON = Target(
    name="babylon",
    description="Babylon.js 9.35 glTF loader + default shader skinning: 8 influences as stored, drawn "
    "divided by their sum (homogeneous w), no position without weight (engines/babylon.py: CPU path too)",
    max_influences=8,
    reads_sets=2,
    selection="slots",
    normalisation="sum",
    zero_weight_rule="vanish",
    min_weight=0.0,
    requantises=False,
    interpolation="babylon",
    rotation="as_stored",
    verified=True,
    exporter=BLENDER_GLTF_EXPORTER,
    sources=(
        "glTFLoader.pure.js 981-1000: JOINTS_1/WEIGHTS_1 -> numBoneInfluencers 8; weights never normalised",
        "bonesVertex.js 4-56, pbr.vertex.js 167/197: worldPos = sum w_k mBones[j_k] p, w = sum of weights; "
        "the rasteriser's divide draws worldPos.xyz / sum (read from the shader, not run)",
        "mesh.pure.js 3979-4069 applySkeleton + math.vector.pure.js 2184-2195: the CPU path divides by the sum "
        "of positive weights, NaN without one (run in tests/engines/test_babylon.py)",
        "animation.pure.js 303-316 + math.vector.pure.js 5098-5122 (Quaternion.Slerp, unnormalised), "
        "6499-6521 (ComposeToRef with the stored quaternion)",
    ),
    normalised_how="Babylon divides by the sum where it draws them (its CPU path's homogeneous divide)",
    file_findings=_babylon_file_findings,
)

#: Every named target, by name.
TARGETS: dict[str, Target] = {t.name: t for t in (THREEJS, GLTF, RAW, UNITY, UNREAL, GODOT4, GODOT8, BABYLON)}
#: three.js by default: the only runtime here whose rules a test proves by running it.
DEFAULT_TARGET = "threejs"


def get_target(name: str) -> Target:
    """The target called ``name`` (case-insensitive); InputError lists the names otherwise."""
    key = name.strip().lower()
    if key not in TARGETS:
        raise InputError(f"unknown engine target {name!r}; choose one of {', '.join(TARGETS)}")
    return TARGETS[key]
