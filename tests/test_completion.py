"""Shell completion (``rcpc completion bash|zsh|fish``) run by the real shells: bash through
its completion function with ``COMP_WORDS`` set as readline sets them, fish through
``complete -C``, zsh loaded with compinit (.ci/run installs fish and zsh)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RECIPE = '''N = param(int, default = 2, doc = "Steps.")
MODE = param(str, default = "a")
manifest(name = "cfg", apiVersion = "v1", kind = "ConfigMap", data = {"v": MODE + str(N)})
manifest(name = "other", apiVersion = "v1", kind = "ConfigMap", data = {"v": MODE})
variant("default")
variant("long", set = {"N": 4})
'''


@pytest.fixture
def shell_env(ws):
    ws.write("recipes/train/r.rcp", RECIPE, dedent=False)
    ws.write("recipes/s.rcp", 'manifest(name = "m", apiVersion = "v1", kind = "ConfigMap", data = {})\n', dedent=False)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return ws.root, env


def script(root: Path, env: dict, shell: str) -> Path:
    out = subprocess.run([sys.executable, "-m", "rcpc", "completion", shell], cwd=root, env=env,
                         capture_output=True, text=True, check=True).stdout
    path = root.parent / f"rcpc.{shell}"
    path.write_text(out)
    return path


def bash_complete(root: Path, env: dict, words: list[str]) -> list[str]:
    """What bash offers for the last of ``words`` (COMP_WORDS / COMP_CWORD as readline sets them)."""
    path = script(root, env, "bash")
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    code = (f"source {path}; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
            f"COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; _shtab_rcpc; "
            "printf '%s\\n' \"${COMPREPLY[@]}\"")
    got = subprocess.run(["bash", "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True)
    return sorted(filter(None, got.stdout.splitlines()))


def fish_complete(root: Path, env: dict, line: str) -> list[str]:
    path = script(root, env, "fish")
    got = subprocess.run(["fish", "--no-config", "-c", f"source {path}; complete -C '{line}'"], cwd=root, env=env,
                         capture_output=True, text=True, check=True)
    return sorted(x.split("\t")[0] for x in got.stdout.splitlines())


def test_bash(shell_env):
    root, env = shell_env
    assert bash_complete(root, env, ["rcpc", "build", ""]) == ["s", "train/r"]
    assert bash_complete(root, env, ["rcpc", "render", "train/r", ""]) == ["cfg.yaml", "other.yaml"]
    assert bash_complete(root, env, ["rcpc", "build", "train/r", "--variant", ""]) == ["default", "long"]
    assert bash_complete(root, env, ["rcpc", "build", "train/r", "--set", "M"]) == ["MODE="]
    assert bash_complete(root, env, ["rcpc", "params", "tr"]) == ["train/r"]
    assert "check" in bash_complete(root, env, ["rcpc", ""])


def test_fish(shell_env):
    root, env = shell_env
    assert fish_complete(root, env, "rcpc build ") == ["s", "train/r"]
    assert fish_complete(root, env, "rcpc render train/r ") == ["cfg.yaml", "other.yaml"]
    assert fish_complete(root, env, "rcpc diff train/r --variant ") == ["default", "long"]
    assert fish_complete(root, env, "rcpc build train/r --set ") == ["MODE=", "N="]


def test_zsh_loads_the_completion(shell_env):
    root, env = shell_env
    path = script(root, env, "zsh")
    text = path.read_text()
    assert "_rcpc_recipes" in text and "_rcpc_variants" in text and "_rcpc_renders" in text
    got = subprocess.run(["zsh", "-f", "-c", f"autoload -U compinit; compinit -u -D; source {path} 2>/dev/null; "
                          "print ${+functions[_shtab_rcpc]} ${+functions[_rcpc_recipes]}"],
                         cwd=root, env=env, capture_output=True, text=True)
    assert got.stdout.split() == ["1", "1"]


def test_candidates_outside_a_workspace_or_for_a_broken_recipe(shell_env, tmp_path_factory):
    root, env = shell_env
    (root / "recipes/train/r.rcp").write_text("X = (\n")

    def listed(*args, cwd=root):
        got = subprocess.run([sys.executable, "-m", "rcpc", "completion", "--list", *args], cwd=cwd, env=env,
                             capture_output=True, text=True)
        return got.returncode, got.stdout, got.stderr

    assert listed("variants", "train/r") == (0, "", "")
    assert listed("renders", "nope") == (0, "", "")
    assert listed("recipes", cwd=tmp_path_factory.mktemp("empty")) == (0, "", "")
