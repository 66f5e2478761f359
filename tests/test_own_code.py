"""Everything in the repository is written here: no file carries another party's licence or copyright notice,
and no folder is named like a place for copied code.

Facts and figures from elsewhere are cited with their source; code, text and assets from elsewhere come in
as pinned packages (constraints.txt), never as files in the tree. What is read or fetched for study stays in
the git-ignored .scratch/. The notices below are what copied code carries; the phrases are assembled from
pieces so that this file does not match itself.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (what the notice is, a pattern over a file's text, case-insensitive)
NOTICES = [
    ("an SPDX licence line", r"SPDX" + r"-License-Identifier"),
    ("a copyright line", r"\bcopy" + r"right\s*(\(c\)|\u00a9|&copy;)"),
    ("a copyright line", r"\(c\)\s*copy" + r"right\b"),
    ("a copyright line", r"\bcopy" + r"right\s+(\d{4}|by)\b[^\n]{0,80}"),
    ("a copyright line", r"(\(c\)|\u00a9)\s*(19|20)\d\d\b"),
    ("a licence's terms", r"\blicensed\s+(under|to\s+the)\b"),
    ("a licence banner", r"@lic" + r"ense\b|@pre" + r"serve\b|license\s+information\s+please\s+see"),
    ("the MIT licence's text", r"permission\s+is\s+hereby\s+granted,\s+free\s+of\s+charge"),
    ("the MIT licence's text", r"the\s+software\s+is\s+provided\s+\W?as\s+is\W?,\s+without\s+warranty"),
    ("a BSD licence's text", r"redistribution\s+and\s+use\s+in\s+source\s+and\s+binary\s+forms"),
    ("a BSD licence's text", r"neither\s+the\s+name\s+of\s+[^\n]{0,80}\s+nor\s+the\s+names\s+of\s+its"),
    ("the ISC licence's text", r"permission\s+to\s+use,\s+copy,\s+modify,\s+and(/or)?\s+distribute"),
    ("the zlib licence's text", r"provided\s+'as-is',\s+without\s+any\s+express\s+or\s+implied"),
    ("the Apache licence's text", r"apache\s+licen[sc]e,?\s+(version\s+)?2"),
    ("the GPL's text", r"gnu\s+(lesser\s+|affero\s+)?general\s+public\s+license"),
    ("the MPL's text", r"mozilla\s+public\s+license"),
    ("the Boost licence's text", r"boost\s+software\s+license"),
    ("a CC licence", r"creative\s+commons\s+(attribution|license|licence)|\bCC[- ]BY(-SA|-NC|-ND)*\b"),
    ("a vendor's licence notice", r"notice\s+to\s+licensee"),
    ("an all-rights-reserved notice", r"all\s+rights\s+" + r"reserved"),
]
PATTERNS = [(what, re.compile(p, re.IGNORECASE)) for what, p in NOTICES]
# A copyright holder named with a capital and no year: case matters here (the word, then a company's name); the
# book's own settings say copyright in lower case ("copyright: 2026")
HOLDER = re.compile(r"\bCopy" + r"right\s+[A-Z][\w.&-]+")

# Identifiers that only other projects' code carries (their kernels and helpers, as they named them): a copy that
# lost its notice still has them. Assembled so that this file does not name them whole.
FINGERPRINTS = [a + b for a, b in (
    ("Packed", "128"), ("load128", "cs"), ("store128", "cg"), ("shfl_scan", "_test"), ("retirement", "Count"),
    ("BlackScholes", "BodyGPU"), ("sgemm_shared", "_mem_block"), ("sgemm", "Warptiling"), ("MatrixMul", "CUDA"),
    ("reduceSingle", "Pass"), ("layernorm_forward", "_kernel"), ("simple_wmma", "_gemm"), ("sgemm2D", "Blocktiling"),
    ("histogram64", "Kernel"), ("fwtBatch1", "Kernel"), ("CONFLICT_FREE", "_OFFSET"), ("warpReduce", "Sum"),
    ("blockReduce", "Sum"), ("transposeNo", "BankConflicts"), ("softmax_forward", "_kernel"),
    ("atomic", "AddX"), ("bitonicSort", "Shared"), ("oddEvenMerge", "Global"))]
FINGERPRINT = re.compile(r"\b(" + "|".join(FINGERPRINTS) + r")\b")

# folder names that hold other people's code or assets
VENDORED = re.compile(r"^(_?third[-_]?part(y|ies)|3rd[-_]?party|_?vendors?|vendored|externals?|extern|_?deps|"
                      r"subprojects|contrib|node_modules|bower_components|site-packages|_?mathjax)$", re.IGNORECASE)
# files the project does not write: fonts, minified bundles, archives, compiled code
FOREIGN_SUFFIXES = (".woff", ".woff2", ".ttf", ".otf", ".eot", ".min.js", ".min.css", ".pdf", ".zip", ".whl",
                    ".tar", ".gz", ".tgz", ".bz2", ".xz", ".jar", ".so", ".a", ".dll", ".dylib", ".exe", ".o")

SKIP = (".venv/", "_build/", ".scratch/")
OWN_LICENCE = re.compile(r"the gemmlab authors", re.IGNORECASE)


def _readable(path: str, data: bytes) -> str:
    """A file's text as a reader sees it: a notebook's cells and outputs joined, comment leaders and line breaks
    folded to single spaces, so that a notice split over lines or JSON strings is still one sentence."""
    text = data.decode("utf-8", "replace")
    if path.endswith(".ipynb"):
        try:
            nb = json.loads(text)
        except ValueError:
            return text
        parts = []
        for cell in nb.get("cells", []):
            parts.append("".join(cell.get("source", [])))
            for out in cell.get("outputs", []):
                parts.append("".join(out.get("text", [])))
                for kind, value in out.get("data", {}).items():
                    if kind.startswith("text/"):
                        parts.append("".join(value) if isinstance(value, list) else str(value))
        text = "\n".join(parts)
    text = re.sub(r"(?m)^[ \t]*(//+|#+|\*+|/\*+|--|;+|%+)", " ", text)
    return re.sub(r"\s+", " ", text)


def notices_in(data: bytes, path: str = "") -> list[str]:
    """What other party's notices (or other projects' identifiers) the bytes of one file carry, each named with
    the text that was found."""
    found, seen = [], set()
    for text in (data.decode("utf-8", "replace"), _readable(path, data)):
        hits = [(what, p.search(text)) for what, p in PATTERNS]
        hits += [("a copyright line", HOLDER.search(text)), ("another project's identifier", FINGERPRINT.search(text))]
        for what, m in hits:
            if m and what not in seen:
                seen.add(what)
                found.append(f"{what}: {m.group(0)!r}")
    return found


def vendored_folders(path: str) -> list[str]:
    return [part for part in path.split("/")[:-1] if VENDORED.match(part)]


def tracked_files(root: Path) -> list[str]:
    """The files git tracks, and the new ones it would take (not ignored), outside the virtual env and build."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout.decode()
    return sorted(p for p in set(out.split("\0")) if p and not p.startswith(SKIP) and (root / p).is_file())


def submodules(root: Path) -> list[str]:
    """Repositories tracked inside this one (git links): other people's code by reference."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-s", "-z"], capture_output=True, check=True).stdout
    return [line.split("\t", 1)[1] for line in out.decode().split("\0") if line.startswith("160000 ")]


def problems(root: Path) -> list[str]:
    bad = [f"{p}: another repository tracked inside this one (a submodule)" for p in submodules(root)]
    for path in tracked_files(root):
        for folder in vendored_folders(path):
            bad.append(f"{path}: in a folder named like copied code ({folder}/)")
        if path.lower().endswith(FOREIGN_SUFFIXES):
            bad.append(f"{path}: a font, bundle, archive or binary, which the project does not write")
            continue
        data = (root / path).read_bytes()
        if path.lower().endswith((".js", ".mjs", ".css")) and max(map(len, data.splitlines()), default=0) > 1000:
            bad.append(f"{path}: minified (a line of over 1000 characters): a bundle, which the project does not "
                       f"write")
        if path in ("LICENSE", "LICENSE.md", "LICENSE.txt") and OWN_LICENCE.search(data.decode("utf-8", "replace")):
            continue                                   # the project's own licence
        bad += [f"{path}: {n}" for n in notices_in(data, path)]
    return bad


def test_no_file_carries_another_partys_notice_and_no_folder_is_named_like_vendored_code():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: which files are tracked is unknown")
    bad = problems(ROOT)
    assert not bad, ("The repository holds only the project's own code and words; these look copied in (cite the "
                     "source instead, or take it as a pinned package):\n  " + "\n  ".join(bad))


def test_the_study_folder_is_ignored_by_git():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", ".scratch/fetched.cu"])
    assert out.returncode == 0, ".scratch/ (code read for study) must be git-ignored"


# --- the check itself, on notices written the way other projects write them -------------------------------

C = "Copy" + "right"
SAMPLES = {
    "spdx": f"// SPDX{'-'}License-Identifier: MIT\n__global__ void k() {{}}\n",
    "c-in-parens": f"/* {C} (c) " + "2019 Someone Else */\n",
    "c-symbol": f"# {C} \u00a9 2021 A. Person\n",
    "c-after": f"(c) {C} 2020, Another Corp.\n",
    "c-year": f" * {C} 2017-2023 NVIDIA Corporation\n",
    "licensed": "# Licensed " + "under the License (the \"License\");\n",
    "mit": ("Permission is hereby " + "granted, free of charge, to any person obtaining a copy\n"),
    "mit-warranty": 'THE SOFTWARE IS PROVIDED "AS IS", ' + "WITHOUT WARRANTY OF ANY KIND\n",
    "bsd": "Redistribution and use in source " + "and binary forms, with or without\n",
    "bsd-names": " * Neither the name of NVIDIA CORPORATION " + "nor the names of its\n",
    "apache": "                                 Apache " + "License\n                           Version 2.0, Jan 2004\n"
              "Apache License, Version " + "2.0\n",   # both forms: the licence's title page and its name
    "gpl": "under the terms of the GNU General " + "Public License as published by\n",
    "reserved": f"{C} 2020 X. All rights " + "reserved.\n",
    "holder": f"/*\n * {C} NVIDIA Corporation\n */\n",
    "bare-year": "// (c) " + "2019 Some Body\n",
    "banner": "/*! lib v3 | @lic" + "ense MIT */\n",
    "isc": "Permission to use, copy, modify, " + "and/or distribute this software\n",
    "zlib": "This software is provided 'as-is', without any " + "express or implied warranty.\n",
    "mpl": "subject to the terms of the Mozilla " + "Public License, v. 2.0\n",
    "boost": "Distributed under the Boost " + "Software License, Version 1.0\n",
    "cc": "licensed CC" + "-BY-SA 4.0\n",
    "apache-foundation": "Licensed " + "to the Apache Software Foundation (ASF)\n",
    "notice-to-licensee": "NOTICE TO " + "LICENSEE:\n",
    # a BSD clause split over the lines of a C comment, and over the strings of a notebook cell
    "split-comment": " * Redistribution and use in source and\n * binary " + "forms, with or without\n",
    "split-notebook": json.dumps({"cells": [{"cell_type": "code", "source": [
        "// Redistribution and use in source\n", "// and binary " + "forms, with or without\n"]}]}),
    "identifier": "template <class T> struct alignas(16) " + FINGERPRINTS[0] + " { T v[4]; };\n",
}
PATHS = {"split-notebook": "chapters/99-copied.ipynb"}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_check_finds_each_kind_of_notice(name):
    assert notices_in(SAMPLES[name].encode(), PATHS.get(name, "x.cu")), name


@pytest.mark.parametrize("text", [
    "copyright: \"2026\"\nhtml_show_copyright: true\n",                     # the book's own settings
    "// the reference is computed in float64 (numpy), as the seed's text says\n",
    "license = { text = \"MIT\" }\n",                                        # our package's own licence field
    "a kernel that copies the rights of way: all rows reserved for the tile\n",
    "the copyright of a figure stays with its source, cited beside it\n",
    "struct PackedTile128 { float v[4]; };  // blockReduceSumOfSquares\n",   # names that merely start alike
])
def test_the_check_leaves_the_projects_own_words_alone(text):
    assert notices_in(text.encode()) == []


@pytest.mark.parametrize("path,bad", [
    ("tests/third_party/x.cu", True), ("tests/third-party/x.cu", True), ("lib/vendor/x.py", True),
    ("_mathjax/mathjax/tex.js", True), ("kernels/external/a.cuh", True), ("js/node_modules/a/index.js", True),
    ("kernels/3rdparty/a.cu", True), ("kernels/sgemm/03_shared_tiling.cu", False), ("extern/lib/x.h", True),
    ("cmake/_deps/x/y.c", True), ("subprojects/z/a.c", True), ("lib/contrib/a.py", True),
    ("lib/gemmlab/emulator/include/cub/block/block_reduce.cuh", False),     # our stand-in, named as CUB's
    ("tests/test_third_party_styles.py", False), ("kernels/common/cub_like.cuh", False),
])
def test_the_check_names_folders_of_copied_code(path, bad):
    assert bool(vendored_folders(path)) == bad


def test_the_check_reads_the_tree_git_would_commit(tmp_path):
    """A new file that git would take is checked before it is committed; an ignored one is not."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text(".scratch/\n")
    (tmp_path / "ok.cu").write_text("__global__ void k() {}\n")
    (tmp_path / ".scratch").mkdir()
    (tmp_path / ".scratch" / "fetched.cu").write_text(SAMPLES["spdx"])
    assert problems(tmp_path) == []
    (tmp_path / "third_party").mkdir()
    (tmp_path / "third_party" / "k.cu").write_text(SAMPLES["bsd"])
    found = problems(tmp_path)
    assert len(found) == 2 and all(f.startswith("third_party/k.cu: ") for f in found), found


def test_the_check_names_submodules_fonts_and_archives_and_spares_the_projects_own_licence(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "font.woff2").write_bytes(bytes(range(256)))
    (tmp_path / "bundle.min.js").write_text("!function(){}();\n")
    (tmp_path / "_static" / "app.js").write_text("var a=1;" * 200 + "\n")
    sub = tmp_path / "cutlass"
    subprocess.run(["git", "init", "-q", str(sub)], check=True)
    (sub / "a.h").write_text("// a header\n")
    subprocess.run(["git", "-C", str(sub), "-c", "user.email=a@b", "-c", "user.name=a", "add", "a.h"], check=True)
    subprocess.run(["git", "-C", str(sub), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "a"],
                   check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "cutlass"], check=True, capture_output=True)
    (tmp_path / "LICENSE").write_text(SAMPLES["mit"] + f"{C} 2026 the gemmlab authors\n")
    found = problems(tmp_path)
    assert any(f.startswith("cutlass: another repository") for f in found), found
    assert any(f.startswith("_static/font.woff2: a font") for f in found), found
    assert any(f.startswith("bundle.min.js: a font") for f in found), found
    assert any(f.startswith("_static/app.js: minified") for f in found), found
    assert not any(f.startswith("LICENSE") for f in found), found
