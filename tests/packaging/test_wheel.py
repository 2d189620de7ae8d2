"""munet as a distribution of its own (issue 53 item 2): `munet-evolve` (import name and command
`munet`; "munet" on PyPI is another project), a wheel that holds every module and the package
data munet loads, that installs in a fresh virtualenv and runs there; and install lines in the
docs that name this distribution and this version's wheel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import munet

REPO = Path(__file__).resolve().parents[2]
DISTRIBUTION = "munet-evolve"
WHEEL_NAME = f"munet_evolve-{munet.__version__}-py3-none-any.whl"
# An install hint or extra written with the other project's name: `munet[ray]`,
# `'munet[{extra}]'` (not `munet-evolve[ray]`, nor Python's `munet["images"]`).
FOREIGN_EXTRA = re.compile(r"(?<![-\w.])munet\[[a-z{]")


def _sources_naming_extras() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    files += sorted((REPO / "munet").rglob("*.py"))
    return files


def test_no_install_hint_names_the_other_munet():
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in _sources_naming_extras()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if FOREIGN_EXTRA.search(line)
    ]
    assert found == [], "install hints must name munet-evolve:\n" + "\n".join(found)


def test_the_docs_install_this_versions_wheel():
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'\nname = "{DISTRIBUTION}"\n' in pyproject
    for page in ("README.md", "docs/cluster.md"):
        text = (REPO / page).read_text()
        wheels = set(re.findall(r"munet_evolve-[\w.]+?-py3-none-any\.whl", text))
        assert wheels == {WHEEL_NAME}, f"{page} names {sorted(wheels)}, expected {WHEEL_NAME}"
        assert f"'dist/{WHEEL_NAME}[ray,s3]' -c dist/constraints.txt" in text, page
    makefile = (REPO / "Makefile").read_text()
    assert "\nwheel: " in makefile and "cp constraints.txt dist/" in makefile


def _source_files(root: Path) -> set[str]:
    """Every file of the package under ``root`` (modules and data), as wheel member names."""
    return {
        path.relative_to(root).as_posix()
        for path in (root / "munet").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory) -> tuple[Path, Path]:
    """(the wheel, the source copy it was built from).

    Built as `make wheel` builds it (`pip wheel --no-deps`), from a copy of the sources, so that
    no build/ or egg-info lands in the checkout; without build isolation and without an index,
    so with the setuptools installed here (the dev extra's), and no network.
    """
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "munet", source / "munet", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--wheel-dir", str(out), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    wheels = list(out.glob("*.whl"))
    assert [w.name for w in wheels] == [WHEEL_NAME]
    return wheels[0], source


@pytest.mark.slow  # builds a wheel (about 10 s)
def test_the_wheel_holds_every_module_and_the_package_data(built_wheel):
    wheel, source = built_wheel
    with zipfile.ZipFile(wheel) as archive:
        members = set(archive.namelist())
        info = f"munet_evolve-{munet.__version__}.dist-info"
        metadata = archive.read(f"{info}/METADATA").decode()
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    missing = sorted(_source_files(source) - members)
    assert missing == [], f"files of munet/ not in the wheel: {missing}"
    # The built-in roots munet loads by path beside munet/pretrain/roots.py (package data).
    for preset in ("VitCpuHybrid", "VitCpu", "VitT3"):
        assert f"munet/pretrain/roots/{preset}.safetensors" in members
        assert f"munet/pretrain/roots/{preset}.json" in members
    assert f"\nName: {DISTRIBUTION}\n" in metadata
    assert f"\nVersion: {munet.__version__}\n" in metadata
    assert "\nRequires-Dist: torch" in metadata and "; extra == " in metadata
    assert re.search(r"^munet = munet\.cli:main$", entry_points, re.M)


def _venv_site_packages(venv: Path) -> Path:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return Path(done.stdout.strip())


@pytest.mark.slow  # builds a wheel, creates a virtualenv, imports torch there (about 30 s)
@pytest.mark.skipif(sys.platform == "win32", reason="the venv's bin/ layout is POSIX's")
def test_the_wheel_installs_in_a_fresh_venv_and_runs(built_wheel, tmp_path):
    wheel, source = built_wheel
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)  # fmt: skip
    python, command = venv / "bin" / "python", venv / "bin" / "munet"
    # The wheel's own files, metadata and entry point, installed by pip into the new venv
    # (this process's pip, run for that interpreter; no index: nothing is downloaded).
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-index", str(wheel)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # Its dependencies (torch and the rest) are not downloaded again: a .pth file in the new
    # venv appends this environment's site-packages to its sys.path, after its own. A .pth
    # line that names a directory only adds it to sys.path: the .pth files in there (this
    # checkout's editable install of munet among them) are not run, so `munet` can only come
    # from the wheel, which the new venv's own site-packages, first on sys.path, holds.
    site_packages = _venv_site_packages(venv)
    here = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site_packages / "zz_test_dependencies.pth").write_text("\n".join(here) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["OMP_NUM_THREADS"] = "1"

    def run(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(list(args), capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    # The entry point (bin/munet, written by pip from the wheel's entry_points.txt).
    assert run(str(command), "--version").stdout.strip() == f"munet {munet.__version__}"
    probe = (
        "import importlib.metadata as metadata, json, munet\n"
        "from munet.pretrain.roots import builtin_roots\n"
        f"print(json.dumps({{'file': munet.__file__, 'version': metadata.version('{DISTRIBUTION}'),"
        " 'roots': sorted(builtin_roots())}))"
    )
    seen = json.loads(run(str(python), "-c", probe).stdout)
    package = site_packages / "munet"
    assert Path(seen["file"]) == package / "__init__.py"  # the wheel's copy, not the checkout's
    assert seen["version"] == munet.__version__
    shipped = sorted(p.stem for p in (source / "munet/pretrain/roots").glob("*.json"))
    assert seen["roots"] == shipped == ["VitCpu", "VitCpuHybrid", "VitT3"]
    # The package data at work: the built-in root read from the installed package, its sha256
    # checked against its card (munet.agents.root), through the installed command.
    done = run(str(command), "root", "--agent", "VitCpu", "-d", str(tmp_path / "state"))
    read = f"from the built-in pretrained root {package / 'pretrain/roots/VitCpu.safetensors'}"
    assert read in done.stdout + done.stderr
    assert (tmp_path / "state" / "VitCpu~root_model~pretrained").is_dir()
