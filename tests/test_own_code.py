"""Everything in the repository is written here: no file carries another party's licence or copyright notice,
and no folder is named like a place for copied code.

Facts and figures from elsewhere are cited with their source; code, text and assets from elsewhere come in
as pinned packages (constraints.txt), never as files in the tree. What is read or fetched for study stays in
the git-ignored .scratch/. The notices below are what copied code carries; the phrases are assembled from
pieces so that this file does not match itself.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (what the notice is, a pattern over the file's bytes, case-insensitive)
NOTICES = [
    ("an SPDX licence line", rb"SPDX" + rb"-License-Identifier"),
    ("a copyright line", rb"\bcopy" + rb"right\s*(\(c\)|\xc2\xa9|&copy;)"),
    ("a copyright line", rb"\(c\)\s*copy" + rb"right\b"),
    ("a copyright line", rb"\bcopy" + rb"right\s+(\d{4}|by)\b[^\n]{0,80}"),
    ("a licence's terms", rb"\blicensed\s+under\b"),
    ("the MIT licence's text", rb"permission\s+is\s+hereby\s+granted,\s+free\s+of\s+charge"),
    ("the MIT licence's text", rb"the\s+software\s+is\s+provided\s+\W?as\s+is\W?,\s+without\s+warranty"),
    ("a BSD licence's text", rb"redistribution\s+and\s+use\s+in\s+source\s+and\s+binary\s+forms"),
    ("a BSD licence's text", rb"neither\s+the\s+name\s+of\s+[^\n]{0,80}\s+nor\s+the\s+names\s+of\s+its"),
    ("the Apache licence's text", rb"apache\s+license,?\s+version\s+2"),
    ("the GPL's text", rb"gnu\s+(lesser\s+|affero\s+)?general\s+public\s+license"),
    ("an all-rights-reserved notice", rb"all\s+rights\s+" + rb"reserved"),
]
PATTERNS = [(what, re.compile(p, re.IGNORECASE)) for what, p in NOTICES]

# folder names that hold other people's code or assets
VENDORED = re.compile(r"^(_?third[-_]?part(y|ies)|3rd[-_]?party|_?vendor(ed)?|externals?|node_modules|"
                      r"bower_components|site-packages|_?mathjax)$", re.IGNORECASE)

SKIP = (".venv/", "_build/", ".scratch/")


def notices_in(data: bytes) -> list[str]:
    """What other party's notices the bytes of one file carry, each named with the text that was found."""
    found = []
    for what, pattern in PATTERNS:
        m = pattern.search(data)
        if m:
            found.append(f"{what}: {m.group(0).decode('utf-8', 'replace')!r}")
    return found


def vendored_folders(path: str) -> list[str]:
    return [part for part in path.split("/")[:-1] if VENDORED.match(part)]


def tracked_files(root: Path) -> list[str]:
    """The files git tracks, and the new ones it would take (not ignored), outside the virtual env and build."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout.decode()
    return sorted(p for p in set(out.split("\0")) if p and not p.startswith(SKIP) and (root / p).is_file())


def problems(root: Path) -> list[str]:
    bad = []
    for path in tracked_files(root):
        for folder in vendored_folders(path):
            bad.append(f"{path}: in a folder named like copied code ({folder}/)")
        bad += [f"{path}: {n}" for n in notices_in((root / path).read_bytes())]
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
    "c-in-parens": f"/* {C} (c) 2019 Someone Else */\n",
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
}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_check_finds_each_kind_of_notice(name):
    assert notices_in(SAMPLES[name].encode()), name


@pytest.mark.parametrize("text", [
    "copyright: \"2026\"\nhtml_show_copyright: true\n",                     # the book's own settings
    "// the reference is computed in float64 (numpy), as the seed's text says\n",
    "license = { text = \"MIT\" }\n",                                        # our package's own licence field
    "a kernel that copies the rights of way: all rows reserved for the tile\n",
])
def test_the_check_leaves_the_projects_own_words_alone(text):
    assert notices_in(text.encode()) == []


@pytest.mark.parametrize("path,bad", [
    ("tests/third_party/x.cu", True), ("tests/third-party/x.cu", True), ("lib/vendor/x.py", True),
    ("_mathjax/mathjax/tex.js", True), ("kernels/external/a.cuh", True), ("js/node_modules/a/index.js", True),
    ("kernels/3rdparty/a.cu", True), ("kernels/sgemm/03_shared_tiling.cu", False),
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
