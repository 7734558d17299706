"""The changelog comes from the fragments through antsibull-changelog: the fragments lint clean,
and a release of galaxy.yml's version (done in a copy, the fragments stay) renders every one of
them into CHANGELOG.rst."""

import os
import shutil
import subprocess

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FRAGMENTS = os.path.join(ROOT, "changelogs", "fragments")


def test_fragments_lint_clean():
    run = subprocess.run(["antsibull-changelog", "lint"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0 and run.stdout.strip() == "", run.stdout + run.stderr


def test_a_release_renders_every_fragment(tmp_path):
    copy = tmp_path / "collection"
    copy.mkdir()
    shutil.copytree(os.path.join(ROOT, "changelogs"), str(copy / "changelogs"))
    shutil.copy(os.path.join(ROOT, "galaxy.yml"), str(copy / "galaxy.yml"))
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    run = subprocess.run(["antsibull-changelog", "release", "--version", version, "--date", "2026-11-23"],
                         cwd=str(copy), capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    rendered = " ".join((copy / "CHANGELOG.rst").read_text().split())
    assert "v%s" % version in rendered
    entries = 0
    for name in sorted(os.listdir(FRAGMENTS)):
        with open(os.path.join(FRAGMENTS, name), encoding="utf-8") as handle:
            fragment = yaml.safe_load(handle)
        for section, items in fragment.items():
            for item in items if isinstance(items, list) else [items]:
                # RST rendering keeps the words; compare the first few.
                words = " ".join(item.split()[:6])
                assert words in rendered, (name, section, words)
                entries += 1
    assert entries >= len(os.listdir(FRAGMENTS))
    # keep_fragments: false - a real release consumes the fragments; the copy shows it did.
    assert not os.listdir(str(copy / "changelogs" / "fragments"))
