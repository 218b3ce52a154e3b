"""The same end-to-end rules for every source kind (issue 17): hierarchy, manifests, generated,
flux HelmReleases, flux Kustomizations and Kraan layers.

Each kind builds a real git repository (tests/kinds_repos.py: main, then a `feature` branch)
with a SOPS secret encrypted by the real sops; charts are local (hierarchy) or served by the
loopback chart repository (flux, kraan). Every test runs the real CLI: the report and the
sticky comment, the leak guard, hostile names, sharding, exit codes and `reviewer explain`.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from agekeys import isolate_sops_key
from chartrepo import ChartRepository
from conftest import GitRepo, git
from flux_repo import app_chart_files, chart_spec, helmrelease, write_chart_dir
from kinds_repos import (
    FLUX,
    FLUX_KUSTOMIZATION,
    GENERATED,
    HIERARCHY,
    KRAAN,
    LEAKY_TEMPLATE,
    MANIFESTS,
    NEW_SECRET,
    SECRET,
    Env,
    Kind,
)

from reviewer.cli import main
from reviewer.comment import balance_problems
from reviewer.errors import ExitStatus

PR_FACTS = ["--pr", "7", "--repository", "acme/fleet", "--run-url", "https://ci.example/1"]


def _redteam(name: str) -> ModuleType:
    """A module of the red-team suite (tests/redteam is not a package)."""
    path = Path(__file__).parent / "redteam" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"kinds_e2e_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def leaked(text: str) -> list[str]:
    """The forms of either secret found in `text`."""
    forms = []
    for secret in (SECRET, NEW_SECRET):
        forms += [secret, secret.upper(), base64.b64encode(secret.encode()).decode()]
    return [form for form in forms if form in text]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The CLI's exit status, stdout and stderr."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    captured = capsys.readouterr()
    code = done.value.code
    assert isinstance(code, int)
    return code, captured.out, captured.err


KINDS = [
    pytest.param(HIERARCHY, id="hierarchy"),
    pytest.param(MANIFESTS, id="manifests"),
    pytest.param(
        GENERATED,
        id="generated",
        marks=pytest.mark.skipif(
            shutil.which("bwrap") is None, reason="generated sources need bubblewrap (bwrap)"
        ),
    ),
    pytest.param(FLUX, id="flux-helmrelease"),
    pytest.param(FLUX_KUSTOMIZATION, id="flux-kustomization"),
    pytest.param(KRAAN, id="kraan"),
]


@pytest.fixture
def env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Env]:
    """A fresh age key sops finds, no CI variables, and a chart repository serving `app`."""
    identity = isolate_sops_key(monkeypatch, tmp_path_factory.mktemp("age"))
    files = {**app_chart_files(), "templates/config.yaml": LEAKY_TEMPLATE}
    with ChartRepository(tmp_path / "served") as charts:
        charts.publish(write_chart_dir(tmp_path / "chart-src" / "app", files), "1.0.0")
        yield Env(identity, charts)


def on_main(kind: Kind, tmp_path: Path, env: Env, *, broken: bool = False) -> GitRepo:
    """The kind's repository committed on main (`broken`: with a failure), `feature` checked out."""
    repo = GitRepo(tmp_path / kind.name)
    kind.write(repo, env, 2, SECRET)
    if broken:
        kind.fail(repo)
    repo.commit("main")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    return repo


def change(kind: Kind, repo: GitRepo, env: Env, *, password: str = SECRET) -> str:
    """Scale (and maybe rotate the secret) on `feature`, committed; returns the head SHA."""
    kind.write(repo, env, 3, password)
    return repo.commit("scale")


def diff(
    kind: Kind, repo: GitRepo, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str]:
    argv = ["diff", "--repo", str(repo.root), "--base", "main", *kind.flags, *extra]
    return run(argv, capsys)


def render(
    kind: Kind, repo: GitRepo, out: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    return run(["render", str(repo.root), *kind.flags, "--out", str(out)], capsys)


def merge_ref(repo: GitRepo, head: str) -> str:
    """The PR merged into main on a detached HEAD, as actions/checkout leaves it."""
    git(repo.root, "checkout", "--quiet", "--detach", "main")
    git(repo.root, "merge", "--quiet", "--no-ff", "-m", "Merge feature", head)
    return git(repo.root, "rev-parse", "HEAD")


def ci(
    kind: Kind, repo: GitRepo, head: str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str]:
    """`reviewer ci` outside Actions, printing the comments it would post."""
    argv = ["ci", *kind.flags, *PR_FACTS, "--pr-head", head, *extra]
    return run(argv, capsys)


@pytest.fixture
def no_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside GitHub Actions: every fact comes from the command line."""
    for name in [n for n in os.environ if n.startswith("GITHUB_")]:
        monkeypatch.delenv(name)


# --- the comment and its summary --------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_report_and_the_sticky_comment_have_the_same_shape_for_every_kind(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str], no_actions: None
) -> None:
    repo = on_main(kind, tmp_path, env)
    head = change(kind, repo, env)
    code, markdown, err = diff(kind, repo, capsys, "--format", "markdown")
    assert code == ExitStatus.OK, err
    assert balance_problems(markdown) == []
    assert markdown.startswith("## :mag: reviewer: ")
    assert f"<summary>~ <code>{kind.changed}</code> changed" in markdown

    merged = merge_ref(repo, head)
    code, comment, err = ci(kind, repo, head, capsys, "--repo", str(repo.root), "--dry-run")
    assert code == ExitStatus.OK, err
    assert comment.startswith("----- comment 1/1")
    body = comment.split("\n", 1)[1]
    assert body.startswith("<!-- reviewer:sticky key=default part=1/1 sha=")
    assert merged[:7] in body or head[:7] in body
    assert f"<summary>~ <code>{kind.changed}</code> changed" in body
    assert balance_problems(body) == []


# --- the leak guard ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_no_form_of_a_sops_value_reaches_any_output(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str], no_actions: None
) -> None:
    repo = on_main(kind, tmp_path, env)
    head = change(kind, repo, env, password=NEW_SECRET)
    outputs: dict[str, str] = {}
    for form in ("markdown", "json", "text"):
        code, out, err = diff(kind, repo, capsys, "--format", form)
        assert code == ExitStatus.OK, err
        outputs[f"diff {form}"] = out + err
        if form == "json":  # once more with its escapes decoded
            outputs["json decoded"] = json.dumps(json.loads(out), ensure_ascii=False)
    # Shown redacted: shape-preserving Helm values, Secret markers for Secret objects.
    if kind.secret_rendered:
        assert "REDAC" in outputs["diff text"] or "<secret:" in outputs["diff text"]
    code, out, err = run(
        ["render", str(repo.root), *kind.flags, "--out", str(tmp_path / "r")], capsys
    )
    assert code == ExitStatus.OK, err
    files = sorted(p for p in (tmp_path / "r").rglob("*") if p.is_file())
    outputs["render"] = out + err + "".join(p.read_text(encoding="utf-8") for p in files)
    target = ["explain", str(repo.root), *kind.target.argv()]
    code, out, err = run([*target, "--base", "main"], capsys)
    assert code == ExitStatus.OK, err
    outputs["explain"] = out + err
    code, out, err = run(["values", *target[1:]], capsys)
    outputs["values"] = out + err
    merge_ref(repo, head)
    code, out, err = ci(kind, repo, head, capsys, "--repo", str(repo.root), "--dry-run")
    assert code == ExitStatus.OK, err
    outputs["ci"] = out + err
    assert {name: leaked(text) for name, text in outputs.items()} == {name: [] for name in outputs}


# --- red team: Markdown in names the pull request controls --------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_hostile_markdown_in_a_pr_controlled_name_stays_inert(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(kind, tmp_path, env)
    kind.hostile(repo, env)
    repo.commit("hostile")
    code, markdown, err = diff(kind, repo, capsys, "--format", "markdown")
    assert code in (ExitStatus.OK, ExitStatus.RENDER_FAILED), err
    assert "evil.example" in markdown, "the hostile name is reported, not dropped"
    _redteam("test_markdown").assert_inert(markdown)


# --- sharding -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_shards_merged_give_the_unsharded_report(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(kind, tmp_path, env)
    change(kind, repo, env, password=NEW_SECRET)
    reports = {}
    for form in ("json", "markdown"):
        code, reports[form], err = diff(kind, repo, capsys, "--format", form)
        assert code == ExitStatus.OK, err
    saved = [str(tmp_path / "shards" / str(index)) for index in (1, 2)]
    for index, directory in enumerate(saved, start=1):
        code, _, err = diff(kind, repo, capsys, "--shard", f"{index}/2", "--save", directory)
        assert code == ExitStatus.OK, err
    for form, whole in reports.items():
        code, merged, err = run(["merge", *saved, "--format", form], capsys)
        assert code == ExitStatus.OK, err
        if form == "json":
            assert _comparable(json.loads(merged)) == _comparable(json.loads(whole))
        else:  # saved sides name the working tree, not its branch
            assert merged == whole.replace("working tree of feature", "working tree")


@pytest.mark.parametrize("kind", KINDS)
def test_ci_shards_post_the_comment_one_run_posts(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str], no_actions: None
) -> None:
    repo = on_main(kind, tmp_path, env)
    head = change(kind, repo, env, password=NEW_SECRET)
    merged = merge_ref(repo, head)
    checkout = ["--repo", str(repo.root), "--head", merged]
    code, whole, err = ci(kind, repo, head, capsys, *checkout, "--dry-run")
    assert code == ExitStatus.OK, err
    saved = [str(tmp_path / "ci-shards" / str(index)) for index in (1, 2)]
    for index, directory in enumerate(saved, start=1):
        shard = ["--shard", f"{index}/2", "--save", directory, "--render-only"]
        code, out, err = ci(kind, repo, head, capsys, *checkout, *shard)
        assert (code, out) == (ExitStatus.OK, ""), err
    from_shards = [word for directory in saved for word in ("--from-shards", directory)]
    code, comment, err = ci(kind, repo, head, capsys, *from_shards, "--dry-run")
    assert code == ExitStatus.OK, err
    assert comment == whole


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """The report without what names the run rather than the review (a merge has no sides'
    working tree to name)."""
    return {key: value for key, value in report.items() if key not in ("base", "head")} | {
        "errors": (report["base"].get("errors"), report["head"].get("errors"))
    }


# --- exit codes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_changes_exit_2_only_when_asked(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(kind, tmp_path, env)
    assert diff(kind, repo, capsys, "--exit-code")[0] == ExitStatus.OK, "nothing changes yet"
    change(kind, repo, env)
    assert diff(kind, repo, capsys, "--exit-code")[0] == ExitStatus.CHANGES
    assert diff(kind, repo, capsys)[0] == ExitStatus.OK


@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_the_change_introduces_exits_1(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(kind, tmp_path, env)
    kind.fail(repo)
    code, out, err = diff(kind, repo, capsys, "--format", "json")
    assert code == ExitStatus.RENDER_FAILED, err
    report = json.loads(out)
    failed = [r for r in report["releases"] if r["status"] == "error"]
    assert failed, report["releases"]
    assert report["head"]["errors"] and not report["base"]["errors"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_already_on_the_base_side_is_a_warning_unless_asked(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(kind, tmp_path, env, broken=True)
    change(kind, repo, env)
    code, _, err = diff(kind, repo, capsys)
    assert code == ExitStatus.OK, err
    assert diff(kind, repo, capsys, "--fail-on-preexisting")[0] == ExitStatus.RENDER_FAILED


@pytest.mark.parametrize("kind", KINDS)
def test_bad_settings_of_a_kind_exit_3_naming_file_and_field(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(kind, tmp_path, env)
    repo.write(".reviewer.yaml", f"sources:\n  - {kind.bad_source}\n")
    code, _, err = run(
        ["render", str(repo.root), *kind.flags, "--out", str(tmp_path / "r")], capsys
    )
    assert code == ExitStatus.INVALID_REPOSITORY, err
    assert ".reviewer.yaml" in err and kind.bad_field in err, err


# --- reviewer explain ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_explain_names_the_files_a_release_is_built_from_and_which_changed(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(kind, tmp_path, env)
    change(kind, repo, env)
    target = kind.target
    argv = ["explain", str(repo.root), *target.argv()]
    code, out, err = run([*argv, "--base", "main"], capsys)
    assert code == ExitStatus.OK, err
    built, changed = out.split("changed since main")
    assert f"\n  {target.built_from}\n" in built.split("built from (", 1)[1]
    assert f"\n  {target.built_from}" in changed or changed.startswith(
        f" (1):\n  {target.built_from}"
    )
    if kind.helm_values:  # Helm releases: every value and where it came from
        assert "replicas: 3  ← " in built
    else:
        assert "an object set built by its source (no Helm values)" in err
        code, _, err = run([*argv, "replicas"], capsys)
        assert code == ExitStatus.USAGE
        assert "not a Helm release" in err and "leave PATH out" in err
    if kind is KRAAN:
        assert "layers/apps/web: a release of Kraan layer 'apps'" in err
    code, out, _ = run(argv, capsys)
    assert code == ExitStatus.OK and "built from (" in out and "changed since" not in out


@pytest.mark.parametrize("kind", KINDS)
def test_explain_names_the_nearest_source_or_location_when_nothing_matches(
    kind: Kind, tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(kind, tmp_path, env)
    target = kind.target
    where = ["explain", str(repo.root), "--deployment", target.deployment]
    code, _, err = run([*where, "--cluster", target.cluster + "x", "--release", "r"], capsys)
    assert code == ExitStatus.USAGE
    assert (
        f"--cluster {target.cluster}x: no such" in err and f"did you mean: {target.cluster}" in err
    )
    typo = target.release[:-1]
    code, _, err = run([*where, "--cluster", target.cluster, "--release", typo], capsys)
    assert code == ExitStatus.USAGE
    assert f"--release {typo}: no such release" in err and f"did you mean: {target.release}" in err
    if kind is not HIERARCHY:  # (the hierarchy's message: test_cli_usage.py)
        where = ["explain", str(repo.root), "--cluster", target.cluster, "--release", "r"]
        code, _, err = run([*where, "--deployment", target.deployment + "x"], capsys)
        assert code == ExitStatus.USAGE
        assert f"--deployment {target.deployment}x: nothing is planned there" in err
        assert f"did you mean: {target.deployment}" in err
    if not kind.helm_values:
        code, _, err = run(["values", str(repo.root), *target.argv()], capsys)
        assert code == ExitStatus.USAGE and "not a Helm release: it has no values" in err


# --- explain: REPO and PATH ---------------------------------------------------------------------


@pytest.fixture
def fleet(tmp_path: Path, env: Env) -> GitRepo:
    return on_main(HIERARCHY, tmp_path, env)


def test_explain_reads_a_lone_word_as_path_when_no_such_directory_exists(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(fleet.root)
    code, out, err = run(["explain", *HIERARCHY.target.argv(), "replicas"], capsys)
    assert code == ExitStatus.OK, err
    winner = "replicas: 2  ← deployments/global.values.yaml (global)"
    assert out == f"{winner}  (overrides chart values.yaml (chart default))\n"


def test_explain_takes_repo_then_path_or_repo_as_an_option(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    release = HIERARCHY.target.argv()
    code, by_position, err = run(["explain", str(fleet.root), *release, "replicas"], capsys)
    assert code == ExitStatus.OK, err
    code, by_option, err = run(["explain", "--repo", str(fleet.root), *release, "replicas"], capsys)
    assert code == ExitStatus.OK, err
    assert by_position == by_option and by_position.startswith("replicas: 2  ← ")
    code, whole, err = run(["explain", str(fleet.root), *release], capsys)
    assert code == ExitStatus.OK and "built from (" in whole


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["../no-such-fleet"], "REPO ../no-such-fleet: no such directory"),
        (["no-such-fleet", "replicas"], "REPO no-such-fleet: no such directory"),
        (["--repo", "no-such-fleet"], "--repo no-such-fleet: no such directory"),
        (["a", "b", "c"], "expected [REPO] [PATH], got 3 arguments"),
        (["--repo", ".", "a", "b"], "with --repo ., give at most PATH"),
    ],
)
def test_explain_says_which_operand_it_could_not_use(
    fleet: GitRepo,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    words: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(fleet.root)
    code, out, err = run(["explain", *HIERARCHY.target.argv(), *words], capsys)
    assert (code, out) == (ExitStatus.USAGE, "")
    assert message in err


def test_a_lone_word_read_as_path_that_finds_nothing_says_how_to_name_a_repository(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(fleet.root)
    code, _, err = run(["explain", *HIERARCHY.target.argv(), "fleet"], capsys)
    assert code == ExitStatus.USAGE
    assert "no value at or under 'fleet'" in err
    assert "'fleet' was read as PATH (it is no directory)" in err and "--repo" in err


def test_a_kustomize_base_outside_an_overlay_is_in_the_overlays_blast_radius(
    tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(MANIFESTS, tmp_path, env)
    repo.write(
        "kustomize/base/deployment.yaml", (repo.root / "apps/web/deployment.yaml").read_text()
    )
    overlay = ["--cluster", "kustomize", "--deployment", "overlays/prod"]
    argv = ["explain", str(repo.root), *overlay, "--release", "kustomization", "--base", "main"]
    code, out, err = run(argv, capsys)
    assert code == ExitStatus.OK, err
    assert out.endswith("changed since main (1):\n  kustomize/base/deployment.yaml\n"), out
    report = json.loads(diff(MANIFESTS, repo, capsys, "--format", "json")[1])
    (impact,) = report["explain"]["blastRadius"]
    assert impact["file"] == "kustomize/base/deployment.yaml"
    assert impact["releases"] == [
        "kustomize/base/kustomization",
        "kustomize/overlays/prod/kustomization",
    ]


def test_explain_of_a_helmrelease_shows_its_chart_and_values_files_as_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "git-chart")
    write_chart_dir(repo.root / "charts" / "app", app_chart_files())
    repo.write("envs/prod.yaml", "replicas: 7\nprod: true\n")
    source = {"url": "https://git.example.invalid/fleet"}
    repo.write("clusters/git.yaml", flux_object("GitRepository", "fleet", spec=source))
    values_files = ["envs/prod.yaml"]
    spec = chart_spec("./charts/app", "fleet", kind="GitRepository", valuesFiles=values_files)
    repo.write("clusters/web.yaml", helmrelease("web", chart=spec, values={"prod": False}))
    repo.commit("flux")
    argv = ["explain", str(repo.root), "--cluster", "clusters", "--deployment", "apps"]
    code, out, err = run([*argv, "--release", "web"], capsys)
    assert code == ExitStatus.OK, err
    lines = out.splitlines()
    assert "replicas: 7  ← chart values.yaml (chart default)" in lines
    assert (
        "prod: false  ← clusters/web.yaml (spec.values)  (overrides chart values.yaml "
        "(chart default))"
    ) in lines
    assert "chartDefault" not in out, "valuesFiles replace the chart's values.yaml"
    files = out.split("built from (", 1)[1]
    for file in ("clusters/web.yaml", "envs/prod.yaml"):
        assert f"\n  {file}\n" in files


def flux_object(kind: str, name: str, **fields: Any) -> str:
    document = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "apps"},
        **fields,
    }
    return json.dumps(document) + "\n"


# --- explain: moved files and the object sets of Flux Kustomizations ----------------------------


@pytest.mark.parametrize(
    ("kind", "moves"),
    [
        pytest.param(KRAAN, ("addons/apps/web.yaml", "addons/base/web.yaml"), id="kraan-layer"),
        pytest.param(FLUX, ("clusters/prod/web.yaml", "clusters/prod/web-release.yaml"), id="flux"),
    ],
)
def test_a_moved_release_file_reports_no_unchanged_value_as_without_effect(
    kind: Kind, moves: tuple[str, str], tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(kind, tmp_path, env)
    change(kind, repo, env)
    old, new = moves
    git(repo.root, "mv", old, new)
    repo.commit("move the release's file")
    code, out, err = diff(kind, repo, capsys, "--format", "json")
    assert code == ExitStatus.OK, err
    report = json.loads(out)
    assert report["explain"]["noEffect"] == [], "an unchanged value of a moved file is no edit"
    [scaled] = [r for r in report["releases"] if r["release"] == "web"]
    assert [v["change"] for v in scaled["values"]] == ["replicas: 2 → 3"]
    code, text, err = diff(kind, repo, capsys)
    assert "had no effect" not in text + err


def test_explain_of_a_kustomizations_object_set_names_its_substitution_sources(
    tmp_path: Path, env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = on_main(FLUX_KUSTOMIZATION, tmp_path, env)
    change(FLUX_KUSTOMIZATION, repo, env, password=NEW_SECRET)
    where = ["--cluster", "prod", "--deployment", "flux-system/apps", "--release", "kustomization"]
    code, out, err = run(["explain", str(repo.root), *where, "--base", "main"], capsys)
    assert code == ExitStatus.OK, err
    assert "prod/flux-system/apps/kustomization: an object set built by its source" in err
    built, changed = out.split("changed since main")
    # The Kustomization, its tree, and the ConfigMap and Secret its substituteFrom reads.
    assert built == (
        "built from (7):\n  apps/db.yaml\n  apps/repo.yaml\n  apps/settings.yaml\n"
        "  apps/web.yaml\n  clusters/prod/apps.yaml\n  clusters/prod/secrets.yaml\n"
        "  clusters/prod/vars.yaml\n"
    )
    assert changed == (
        " (3):\n  apps/db.yaml\n  clusters/prod/secrets.yaml\n  clusters/prod/vars.yaml\n"
    )
    report = json.loads(diff(FLUX_KUSTOMIZATION, repo, capsys, "--format", "json")[1])
    radius = {impact["file"]: impact["releases"] for impact in report["explain"]["blastRadius"]}
    assert radius["clusters/prod/vars.yaml"] == [
        "prod/apps/web",
        "prod/flux-system/apps/kustomization",
    ]
