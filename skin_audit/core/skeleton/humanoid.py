# SPDX-License-Identifier: GPL-3.0-or-later
"""Map a rig's deform bones to a standard humanoid (VRM 1.0's humanoid bones).  numpy only.

VRM 1.0's humanoid list and Unity's Humanoid are close: the same 15 required bones (hips,
spine, head, and upper arm, lower arm, hand, upper leg, lower leg, foot on each side) and
the same optional ones.  The mapping is found in three steps:

1. **Names**: prefixes of the usual pipelines are stripped (Mixamo ``mixamorig:``,
   Rigify ``DEF-``, VRoid ``J_Bip_C_`` / ``J_Bip_L_``, 3ds Max ``Bip01``, Character
   Creator ``CC_Base_``), the side is read from Left/Right, ``.L``/``_l``/``L_`` tokens,
   and the rest is looked up among each humanoid bone's usual names (the UE mannequin's
   ``thigh_l``/``calf_l``, Mixamo's ``LeftUpLeg``/``LeftLeg``, Rigify's ``thigh.L``/
   ``shin.L``...).  A bone whose name carries a segment number after its side (Rigify's
   ``upper_arm.L.001``) or ``twist`` is a helper segment, never the humanoid bone.
2. **Hierarchy**: the hips are the nearest common ancestor of the two upper legs when no
   bone is named so; the central chain from the hips to the head splits at the bone the
   arms hang from (the LCA of the two upper arms): spine, chest, upper chest below it, neck
   and head above it (Rigify's ``spine.001`` ... ``spine.006``, Mixamo's ``Spine1/2``).
   A limb's middle bone missing by name is the bone between its two ends.
3. **Verdict**: a rig is humanoid when at least ``HUMANOID_MIN_REQUIRED`` of the 15
   required bones are found; then every required bone not found is *missing*, and a
   humanoid bone claimed by two bones that are not one chain is *ambiguous*.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]

#: VRM 1.0 humanoid bones (vrm-specification, VRMC_vrm-1.0/humanoid.md), body first.
CENTRAL = ("hips", "spine", "chest", "upperChest", "neck", "head", "jaw")
SIDED = ("Eye", "Shoulder", "UpperArm", "LowerArm", "Hand", "UpperLeg", "LowerLeg", "Foot", "Toes")
FINGERS = tuple(f"{finger}{part}" for finger, parts in (
    ("Thumb", ("Metacarpal", "Proximal", "Distal")),
    ("Index", ("Proximal", "Intermediate", "Distal")),
    ("Middle", ("Proximal", "Intermediate", "Distal")),
    ("Ring", ("Proximal", "Intermediate", "Distal")),
    ("Little", ("Proximal", "Intermediate", "Distal")),
) for part in parts)
HUMAN_BONES = CENTRAL + tuple(f"{side}{b}" for b in SIDED + FINGERS for side in ("left", "right"))
#: VRM 1.0's required bones (and Unity Humanoid's, but for Unity's optional spine).
REQUIRED = ("hips", "spine", "head") + tuple(
    f"{side}{b}" for side in ("left", "right")
    for b in ("UpperArm", "LowerArm", "Hand", "UpperLeg", "LowerLeg", "Foot"))
#: A rig with at least this many of the 15 required bones is judged as a humanoid.
HUMANOID_MIN_REQUIRED = 10

_PREFIX = re.compile(r"^(?:.*[:|])|^(?:DEF|ORG)[-_.]|^J_(?:Bip|Adj|Sec)_|^Bip\d*[ _]?|^CC_Base_|^Armature[_.]",
                     re.IGNORECASE)
_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SIDE = {"left": "left", "l": "left", "right": "right", "r": "right", "lf": "left", "rt": "right"}
_CENTRE = {"c", "m", "mid", "center", "centre"}
#: A token that makes a bone a helper, never the humanoid bone itself.
_HELPER = {"twist", "roll", "end", "nub", "tip", "ik", "pole", "target", "helper", "correct", "corrective",
           "bend", "share", "null", "ctrl", "control", "mch", "wgt", "socket", "attach", "prop", "weapon"}
#: Core names (side and digits removed, lowercase, joined) of each humanoid bone.
_NAMES: dict[str, tuple[str, ...]] = {
    "hips": ("hips", "hip", "pelvis"),
    "chest": ("chest",),
    "upperChest": ("upperchest",),
    "neck": ("neck",),
    "head": ("head",),
    "jaw": ("jaw",),
    "Eye": ("eye",),
    "Shoulder": ("shoulder", "clavicle", "collar", "collarbone"),
    "UpperArm": ("upperarm", "arm", "uparm"),
    "LowerArm": ("lowerarm", "forearm", "lowarm", "elbow"),
    "Hand": ("hand", "wrist"),
    "UpperLeg": ("upperleg", "upleg", "thigh"),
    "LowerLeg": ("lowerleg", "leg", "calf", "shin", "lowleg", "knee"),
    "Foot": ("foot", "ankle"),
    "Toes": ("toes", "toe", "toebase", "ball"),
}
_FINGER_WORDS = {"thumb": "Thumb", "index": "Index", "findex": "Index", "middle": "Middle", "fmiddle": "Middle",
                 "ring": "Ring", "fring": "Ring", "little": "Little", "pinky": "Little", "fpinky": "Little",
                 "pinkie": "Little"}
_FINGER_PARTS = {"Thumb": ("Metacarpal", "Proximal", "Distal")}
_PART_WORDS = {"metacarpal": 0, "proximal": 0, "intermediate": 1, "distal": 2}
_LOOKUP = {core: bone for bone, cores in _NAMES.items() for core in cores}


@dataclass(frozen=True)
class NamePart:
    """What a bone's name says: its humanoid bone (or None), side, and whether it is a segment."""

    bone: str | None
    side: str  # "left", "right" or ""
    segment: bool  # a helper segment (a number after the side, twist, end...)
    spine_index: int | None = None  # a spine chain bone's number (Spine1 -> 1, spine_03 -> 3)


def tokens(name: str) -> list[str]:
    """Lowercase word and number tokens of a bone name after a pipeline's prefix."""
    stripped = _PREFIX.sub("", name.strip())
    return [t.lower() for t in _SPLIT.findall(stripped)]


def read_name(name: str) -> NamePart:
    """Read a humanoid bone out of ``name`` (``mixamorig:LeftForeArm`` -> leftLowerArm)."""
    toks = tokens(name)
    side = ""
    words: list[str] = []
    digits: list[int] = []
    seen_side_at = -1
    for i, t in enumerate(toks):
        if t in _SIDE and not side:
            side = _SIDE[t]
            seen_side_at = i
        elif t in _CENTRE:
            continue
        elif t.isdigit():
            digits.append(i)
        else:
            words.append(t)
    if any(w in _HELPER for w in words):
        return NamePart(None, side, True)
    # Words that carry the side glued on ("leftarm" never happens after _SPLIT; "lowerarm_l" does).
    core = "".join(words)
    numbers = [int(toks[i]) for i in digits]
    for finger_word, finger in _FINGER_WORDS.items():
        if core in (finger_word, "hand" + finger_word) or (core.startswith(finger_word) and
                                                            core[len(finger_word):] in _PART_WORDS):
            part_word = core[len(finger_word):]
            if part_word == "metacarpal" and finger != "Thumb":
                return NamePart(None, side, True)  # UE5's index_metacarpal: not a humanoid bone
            if part_word in _PART_WORDS:
                index = _PART_WORDS[part_word]
            elif numbers:
                index = max(numbers[0] - 1, 0)
            else:
                return NamePart(None, side, False)
            parts = _FINGER_PARTS.get(finger, ("Proximal", "Intermediate", "Distal"))
            if not 0 <= index < len(parts) or not side:
                return NamePart(None, side, True)
            return NamePart(f"{finger}{parts[index]}", side, False)
    if core == "spine":
        if side:
            return NamePart(None, side, False)
        return NamePart("spine", "", False, spine_index=numbers[0] if numbers else 0)
    bone = _LOOKUP.get(core)
    if bone is None:
        return NamePart(None, side, False)
    # A number after the side (Rigify's upper_arm.L.001) or any number on a limb bone whose
    # name is otherwise plain marks a segment; "spine_01"-style numbers are handled above.
    segment = any(i > seen_side_at >= 0 for i in digits) or (bone not in CENTRAL and bool(digits) and side == "")
    if bone[0].isupper():  # a sided bone
        if not side:
            return NamePart(None, "", segment)
        return NamePart(bone, side, segment)
    if side:  # a central name on one side (Rigify's pelvis.L) is a helper of that side
        return NamePart(None, side, False)
    return NamePart(bone, "", segment)


@dataclass(frozen=True)
class HumanoidMap:
    """The humanoid bones found on a rig."""

    #: humanoid bone -> the rig's bone name (VRM 1.0 names: hips, leftUpperArm, ...).
    bones: dict[str, str]
    #: how each was found: "name" or "hierarchy".
    how: dict[str, str]
    #: humanoid bone -> the rig's bones that claim it and are not one chain.
    ambiguous: dict[str, tuple[str, ...]]
    #: required humanoid bones not found (only for a humanoid rig).
    missing: tuple[str, ...]
    humanoid: bool

    def to_dict(self) -> dict[str, object]:
        return {"humanoid": self.humanoid, "bones": dict(self.bones), "how": dict(self.how),
                "missing": list(self.missing), "ambiguous": {k: list(v) for k, v in self.ambiguous.items()}}


def _ancestors(j: int, parents: Sequence[int]) -> list[int]:
    out = []
    while j >= 0:
        out.append(j)
        j = parents[j]
    return out


def _lca(a: int, b: int, parents: Sequence[int]) -> int:
    up = set(_ancestors(a, parents))
    for j in _ancestors(b, parents):
        if j in up:
            return j
    return -1


def _path(top: int, bottom: int, parents: Sequence[int]) -> list[int] | None:
    """Bones from ``top`` down to ``bottom`` (both included), or None if ``top`` is no ancestor."""
    chain = _ancestors(bottom, parents)
    if top not in chain:
        return None
    return chain[:chain.index(top) + 1][::-1]


def map_humanoid(names: Sequence[str], parents: Sequence[int], heads: F64, tails: F64) -> HumanoidMap:
    """Map bones to VRM 1.0 humanoid bones by name, then by hierarchy.

    Parameters
    ----------
    names : (J,) bone names (deform bones, each under its nearest deform ancestor)
    parents : (J,) parent index, -1 for a root
    heads, tails : (J, 3) float64 rest heads and tails (armature space)
    """
    claims: dict[str, list[int]] = {}
    spine_bones: list[tuple[int, int]] = []
    for j, n in enumerate(names):
        part = read_name(n)
        if part.bone is None or part.segment:
            continue
        if part.bone == "spine":
            spine_bones.append((part.spine_index or 0, j))
            continue
        key = part.side + part.bone if part.side else part.bone
        claims.setdefault(key, []).append(j)
    found: dict[str, int] = {}
    how: dict[str, str] = {}
    ambiguous: dict[str, tuple[str, ...]] = {}
    for key, js in claims.items():
        # One chain (a bone and its own descendants): the topmost is the humanoid bone.
        tops = [j for j in js if not any(k != j and k in _ancestors(j, parents) for k in js)]
        if len(tops) == 1:
            found[key], how[key] = tops[0], "name"
        else:
            ambiguous[key] = tuple(names[j] for j in tops)
    _by_hierarchy(found, how, spine_bones, parents, np.asarray(heads, dtype=np.float64),
                  np.asarray(tails, dtype=np.float64))
    for key in ambiguous:  # names claim it twice: the hierarchy does not choose for them
        found.pop(key, None)
    bones = {k: names[j] for k, j in sorted(found.items(), key=lambda kv: HUMAN_BONES.index(kv[0]))}
    present = [r for r in REQUIRED if r in found]
    humanoid = len(present) >= HUMANOID_MIN_REQUIRED
    missing = tuple(r for r in REQUIRED if r not in found and r not in ambiguous) if humanoid else ()
    return HumanoidMap(bones, {k: how[k] for k in bones}, ambiguous if humanoid else {}, missing, humanoid)


def _by_hierarchy(found: dict[str, int], how: dict[str, str], spine_bones: list[tuple[int, int]],
                  parents: Sequence[int], heads: F64, tails: F64) -> None:
    """Hips, the central chain and limb middles where names did not say."""
    def put(key: str, j: int | None) -> None:
        if key not in found and j is not None and j >= 0 and j not in found.values():
            found[key], how[key] = j, "hierarchy"

    legs = [found.get(f"{s}UpperLeg") for s in ("left", "right")]
    if "hips" not in found and legs[0] is not None and legs[1] is not None:
        put("hips", _lca(legs[0], legs[1], parents))
    numbered = [j for _, j in sorted(spine_bones)]
    if "hips" not in found and len(numbered) >= 2 and min(spine_bones)[0] == 0:
        # Rigify's metarig names the hips "spine" and the bones above it spine.001, spine.002, ...
        put("hips", numbered[0])
    if "hips" not in found and numbered and parents[numbered[0]] >= 0:
        put("hips", parents[numbered[0]])
    hips = found.get("hips")
    if hips is None:
        return
    central = _central_chain(found, numbered, hips, parents)
    if not central:
        return
    below, above = _split_at_arms(found, central, parents, heads, tails)
    named = set(found.values())
    below = [j for j in below if j not in named]
    if below:
        put("spine", below[0])
        if len(below) >= 2:
            put("chest", below[1])
        if len(below) >= 3:
            put("upperChest", below[-1])
    if above:
        put("head", above[-1])
        if len(above) >= 2:
            put("neck", above[0])
    for side in ("left", "right"):
        for upper, middle, end in (("UpperArm", "LowerArm", "Hand"), ("UpperLeg", "LowerLeg", "Foot")):
            a, b = found.get(side + upper), found.get(side + end)
            if a is None or b is None or side + middle in found:
                continue
            between = _path(a, b, parents)
            if between is not None and len(between) >= 3:
                put(side + middle, between[1])
    for side in ("left", "right"):
        for middle, end in (("LowerArm", "Hand"), ("LowerLeg", "Foot")):
            # A limb's end under another name (Quaternius' "Palm.L"): the one deform child of its middle.
            m = found.get(side + middle)
            if m is not None and side + end not in found:
                children = [j for j, p in enumerate(parents) if p == m]
                if len(children) == 1:
                    put(side + end, children[0])


def _central_chain(found: dict[str, int], numbered: list[int], hips: int, parents: Sequence[int]) -> list[int]:
    """The bones from above the hips to the head: the hierarchy's path where it has one (to the
    named head, or to the deepest spine bone), else the numbered spine bones in order (a deform
    hierarchy broken by helper bones, as Rigify's is)."""
    top = found.get("head")
    if top is None:
        under = [j for j in numbered if j != hips and hips in _ancestors(j, parents)]
        top = max(under, key=lambda j: len(_ancestors(j, parents))) if under else None
    if top is not None:
        path = _path(hips, top, parents)
        if path is not None and len(path) > 1:
            return path[1:]
    chain = [j for j in numbered if j != hips]
    if "head" in found and found["head"] not in chain:
        chain.append(found["head"])
    return chain


def _split_at_arms(found: dict[str, int], central: list[int], parents: Sequence[int], heads: F64,
                   tails: F64) -> tuple[list[int], list[int]]:
    """The central chain below the arms (spine, chest, upper chest) and above them (neck, head):
    split at the bone both arms hang from, or where the shoulders sit along the chain."""
    arms = [found.get(f"{s}Shoulder", found.get(f"{s}UpperArm")) for s in ("left", "right")]
    if arms[0] is not None and arms[1] is not None:
        branch = _lca(arms[0], arms[1], parents)
        if branch in central:
            split = central.index(branch) + 1
            return central[:split], central[split:]
        axis = tails[central[-1]] - heads[central[0]]
        length = float(np.linalg.norm(axis))
        if length > 0:
            axis = axis / length
            shoulders = float(np.mean([heads[a] @ axis for a in arms]))
            middles = [(heads[j] + tails[j]) @ axis / 2 for j in central]
            split = sum(1 for m in middles if m < shoulders)
            return central[:split], central[split:]
    neck = found.get("neck")
    split = central.index(neck) if neck in central else len(central) - 1
    return central[:split], central[split:]
