"""SOPS values through the whole pipeline: precedence, redaction, replay, leak guard, keyless."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt, sops_decoder
from conftest import GitRepo, Repo, received_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.sops import KeylessMode

SECRET_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n",
    "values.yaml": "db: {host: db.internal, password: ''}\nplain: visible-value\n",
    "templates/all.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ .Release.Name }}-config
        data:
          url: "postgres://app:{{ .Values.db.password }}@{{ .Values.db.host }}/app"
          password: {{ .Values.db.password | quote }}
          encoded: {{ .Values.db.password | b64enc | quote }}
          plain: {{ .Values.plain | quote }}
        ---
        apiVersion: v1
        kind: Secret
        metadata:
          name: {{ .Release.Name }}-secret
        data:
          password: {{ .Values.db.password | b64enc | quote }}
          static: {{ "not-from-sops" | b64enc | quote }}
        stringData:
          url: "postgres://app:{{ .Values.db.password }}@db/app"
        """,
}


pytestmark = pytest.mark.usefixtures("age_key")


def sops_file(repo: Repo, path: str, document: dict[str, Any], identity: AgeIdentity) -> None:
    target = repo.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    encrypt(target.parent, document, identity, name=target.name)


def test_sops_at_every_level_with_design_precedence(repo: Repo, age_key: AgeIdentity) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        """\
        releases:
          - name: app
            chart: ../../charts/dump
            values: [{winner: template-values}]
            secrets: [template.sops.yaml]
        """,
    )
    repo.write(
        "deployments/g/c/apps/d/deployment.yaml",
        "apps: [{template: app, values: [{winner: instance-values}], secrets: [inst.sops.yaml]}]\n",
    )
    levels = {
        "templates/app/template.sops.yaml": "template-secrets",
        "deployments/g/c/apps/d/inst.sops.yaml": "instance-secrets",
        "deployments/global.values.sops.yaml": "global",
        "deployments/g/group.values.sops.yaml": "group",
        "deployments/g/c/cluster.values.sops.yaml": "cluster",
        "deployments/g/c/apps/d/values.sops.yaml": "deployment",
    }
    for path, level in levels.items():
        sops_file(repo, path, {"winner": level, level: f"{level}-secret"}, age_key)

    def values() -> dict[str, Any]:
        return received_values(repo.render(secrets=sops_decoder()), "g/c", "d", "app")

    got = values()
    assert got["winner"] == "deployment"
    assert {level: got[level] for level in levels.values()} == {
        level: f"{level}-secret" for level in levels.values()
    }
    # Remove the highest level each time: the next one down must win.
    for path, expected in [
        ("deployments/g/c/apps/d/values.sops.yaml", "cluster"),
        ("deployments/g/c/cluster.values.sops.yaml", "group"),
        ("deployments/g/group.values.sops.yaml", "global"),
        ("deployments/global.values.sops.yaml", "instance-secrets"),
        ("deployments/g/c/apps/d/inst.sops.yaml", "template-secrets"),
    ]:
        (repo.root / path).unlink()
        if "inst.sops" in path:
            repo.write(
                "deployments/g/c/apps/d/deployment.yaml",
                "apps: [{template: app, values: [{winner: instance-values}]}]\n",
            )
        assert values()["winner"] == expected, path


def test_plain_yaml_beats_sops_within_a_level(repo: Repo, age_key: AgeIdentity) -> None:
    repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    sops_file(repo, "deployments/c/cluster.values.sops.yaml", {"a": "sops", "b": "sops"}, age_key)
    repo.write("deployments/c/cluster.values.yaml", "a: yaml\n")
    got = received_values(repo.render(secrets=sops_decoder()), "c", "d", "app")
    assert (got["a"], got["b"]) == ("yaml", "sops")


@pytest.fixture
def secret_repo(repo: Repo, age_key: AgeIdentity) -> Repo:
    repo.add_chart("charts/app", SECRET_CHART)
    repo.add_template("svc", "releases: [{name: svc, chart: ../../charts/app}]\n")
    repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: svc}]\n")
    repo.write("deployments/c/cluster.values.yaml", "db: {host: pg.example.org}\n")
    sops_file(
        repo,
        "deployments/c/apps/d/values.sops.yaml",
        {"db": {"password": "hunter2-Sup3r"}},
        age_key,
    )
    return repo


def render_out(repo: Repo, out: Path, *extra: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo.root), "--out", str(out), *extra])
    code = done.value.code
    assert isinstance(code, int)
    text = "".join(p.read_text() for p in sorted(out.rglob("*")) if p.is_file())
    return code, text


def test_render_redacts_whole_embedded_and_base64_secrets(
    secret_repo: Repo, tmp_path: Path
) -> None:
    code, text = render_out(secret_repo, tmp_path / "out")
    assert code == ExitStatus.OK
    for form in ("hunter2-Sup3r", base64.b64encode(b"hunter2-Sup3r").decode(), "hunter2"):
        assert form not in text
    config = (tmp_path / "out/c/d/svc/configmap-svc-config.yaml").read_text()
    assert "password: REDACTE-REDAC" in config
    assert "url: postgres://app:REDACTE-REDAC@pg.example.org/app" in config
    assert f"encoded: {base64.b64encode(b'REDACTE-REDAC').decode()}" in config
    assert "plain: visible-value" in config
    secret = (tmp_path / "out/c/d/svc/secret-svc-secret.yaml").read_text()
    assert (
        "not-from-sops" not in secret and base64.b64encode(b"not-from-sops").decode() not in secret
    )
    assert secret.count("<secret:sha256-hmac:") == 3


def test_no_redact_is_for_local_debugging_only(
    secret_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, text = render_out(secret_repo, tmp_path / "out", "--no-redact")
    assert code == ExitStatus.OK and "hunter2-Sup3r" in text
    monkeypatch.setenv("CI", "true")
    with pytest.raises(SystemExit) as done:
        main(["render", str(secret_repo.root), "--out", str(tmp_path / "ci"), "--no-redact"])
    assert done.value.code == ExitStatus.INVALID_REPOSITORY
    assert not (tmp_path / "ci").exists()


def test_secret_in_a_render_error_is_redacted(
    secret_repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret_repo.write(
        "charts/app/templates/fail.yaml",
        '{{ fail (printf "bad password %s" .Values.db.password) }}\n',
    )
    code, text = render_out(secret_repo, tmp_path / "out")
    assert code == ExitStatus.RENDER_FAILED
    stderr = capsys.readouterr().err
    assert "bad password REDACTE-REDAC" in stderr and "bad password REDACTE-REDAC" in text
    assert "hunter2" not in stderr + text


def test_derived_gotmpl_values_are_redacted_too(secret_repo: Repo, tmp_path: Path) -> None:
    secret_repo.write(
        "deployments/c/apps/d/values.yaml.gotmpl",
        'plain: "derived-{{ .Values.db.password | upper }}"\n',
    )
    _, text = render_out(secret_repo, tmp_path / "out")
    assert "HUNTER2-SUP3R" not in text
    assert "plain: derived-REDACTE-REDAC" in text


def test_keyless_mode_renders_placeholders_and_says_so(
    secret_repo: Repo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("SOPS_AGE_KEY_FILE")
    code, text = render_out(secret_repo, tmp_path / "out")
    assert code == ExitStatus.OK
    assert "secrets were not decrypted" in capsys.readouterr().err
    index = json.loads((tmp_path / "out/index.json").read_text())
    assert any("secrets were not decrypted" in w for w in index["warnings"])
    assert "password: sops-placeholder" in text


def test_example_fleet_keyless_and_decrypted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = Path(__file__).parent.parent / "examples" / "fleet"
    monkeypatch.delenv("SOPS_AGE_KEY_FILE")
    with pytest.raises(SystemExit) as done:
        main(["render", str(example), "--out", str(tmp_path / "keyless"), "--secrets", "keyless"])
    assert done.value.code == ExitStatus.OK
    index = json.loads((tmp_path / "keyless/index.json").read_text())
    assert index["warnings"] and "not decrypted" in index["warnings"][0]
    assert all(r["status"] == "rendered" for r in index["releases"])
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(example / "demo-age-key.txt"))
    with pytest.raises(SystemExit) as done:
        main(["render", str(example), "--out", str(tmp_path / "real"), "--secrets", "decrypt"])
    assert done.value.code == ExitStatus.OK
    real = "".join(p.read_text() for p in (tmp_path / "real").rglob("*.yaml"))
    decoder = sops_decoder(keyless=KeylessMode.NEVER)
    plain = [
        leaf
        for path in example.rglob("*.sops.yaml")
        if path.name != ".sops.yaml"  # sops' own creation rules
        for leaf in _leaves(decoder.decrypt(path, source=path.name))
    ]
    assert len(plain) >= 3
    assert not [leaf for leaf in plain if str(leaf) in real]


def _leaves(tree: Any) -> list[Any]:
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in _leaves(value)]
    return [tree]


@pytest.fixture
def secret_git(tmp_path: Path, age_key: AgeIdentity) -> GitRepo:
    repo = GitRepo(tmp_path / "secretgit")
    repo.add_chart().add_template().add_chart("charts/app", SECRET_CHART)
    repo.add_template("svc", "releases: [{name: svc, chart: ../../charts/app}]\n")
    for cluster in ("a", "b"):
        repo.write(f"deployments/{cluster}/apps/d/deployment.yaml", "apps: [{template: svc}]\n")
        sops_file(
            repo,
            f"deployments/{cluster}/apps/d/values.sops.yaml",
            {"db": {"password": f"old-{cluster}-passw0rd"}},
            age_key,
        )
    repo.commit("base")
    return repo


def diff_json(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    with pytest.raises(SystemExit) as done:
        main(["diff", "--repo", str(repo.root), "--base", "main", "--format", "json"])
    assert done.value.code == ExitStatus.OK
    out = capsys.readouterr().out
    return json.loads(out), out


def test_changed_secret_shows_redacted_change_unchanged_shows_none(
    secret_git: GitRepo, age_key: AgeIdentity, capsys: pytest.CaptureFixture[str]
) -> None:
    sops_file(
        secret_git,
        "deployments/a/apps/d/values.sops.yaml",
        {"db": {"password": "new-a-passw0rd!"}},
        age_key,
    )
    # Re-encrypting b with the same value changes the file but not the secret.
    sops_file(
        secret_git,
        "deployments/b/apps/d/values.sops.yaml",
        {"db": {"password": "old-b-passw0rd"}},
        age_key,
    )
    report, out = diff_json(secret_git, capsys)
    changed = {r["cluster"] for r in report["releases"] if r["status"] == "changed"}
    assert changed == {"a"}
    for secret in ("old-a-passw0rd", "new-a-passw0rd", "old-b-passw0rd"):
        assert secret not in out
    release = next(r for r in report["releases"] if r["cluster"] == "a")
    secret_object = next(r for r in release["resources"] if r["kind"] == "Secret")
    assert secret_object["status"] == "changed"
    assert "<secret:sha256-hmac:" in secret_object["diff"]
    config = next(r for r in release["resources"] if r["kind"] == "ConfigMap")
    assert 'data.password: "RED-R-REDACTED" → "RED-R-REDACTED!"' in config["changes"]


def test_secret_removed_by_the_change_does_not_leak_from_the_baseline(
    secret_git: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    (secret_git.root / "deployments/a/apps/d/values.sops.yaml").unlink()
    secret_git.write("deployments/a/apps/d/values.yaml", "db: {password: ''}\n")
    report, out = diff_json(secret_git, capsys)
    assert "old-a-passw0rd" not in out
    assert any(r["status"] == "changed" and r["cluster"] == "a" for r in report["releases"])


def test_markdown_and_text_reports_never_leak(
    secret_git: GitRepo, age_key: AgeIdentity, capsys: pytest.CaptureFixture[str]
) -> None:
    sops_file(
        secret_git,
        "deployments/a/apps/d/values.sops.yaml",
        {"db": {"password": "fresh-Passw0rd-9"}},
        age_key,
    )
    for output_format in ("markdown", "text"):
        with pytest.raises(SystemExit):
            main(
                [
                    "diff",
                    "--repo",
                    str(secret_git.root),
                    "--base",
                    "main",
                    "--format",
                    output_format,
                ]
            )
        captured = capsys.readouterr()
        for secret in ("fresh-Passw0rd-9", "old-a-passw0rd"):
            assert secret not in captured.out + captured.err


# Secrets hypothesis draws: delimiters, newlines, unicode, numbers, short and long.
_SECRET = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=6, max_size=60),
    st.text("abcXYZ0189:/@?&=+ -_.%!\n\t", min_size=6, max_size=200),
    st.from_regex(r"[A-Za-z0-9]{6,80}", fullmatch=True),
).filter(lambda s: s.strip() == s and any(c.isascii() and c.isalnum() for c in s))
_LEVEL = st.sampled_from(
    [
        "deployments/global.values.sops.yaml",
        "deployments/g/group.values.sops.yaml",
        "deployments/g/c/cluster.values.sops.yaml",
        "deployments/g/c/apps/d/values.sops.yaml",
    ]
)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(secret=_SECRET, level=_LEVEL, number=st.integers(min_value=100_000, max_value=10**12))
def test_property_no_secret_reaches_any_output(
    tmp_path_factory: pytest.TempPathFactory,
    age_key: AgeIdentity,
    secret: str,
    level: str,
    number: int,
) -> None:
    repo = Repo(tmp_path_factory.mktemp("prop") / "repo")
    repo.add_chart("charts/app", SECRET_CHART).add_template(
        "svc", "releases: [{name: svc, chart: ../../charts/app}]\n"
    )
    repo.write("deployments/g/c/apps/d/deployment.yaml", "apps: [{template: svc}]\n")
    repo.write("deployments/g/c/cluster.values.yaml", "plain: visible-value\n")
    sops_file(repo, level, {"db": {"password": secret}, "pin": number}, age_key)
    repo.write(
        "charts/app/templates/pin.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pin}\n"
        "data: {pin: {{ .Values.pin | quote }}}\n",
    )
    out = tmp_path_factory.mktemp("out") / "out"
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo.root), "--out", str(out)])
    assert done.value.code in (ExitStatus.OK, ExitStatus.RENDER_FAILED)
    text = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    if len(secret) >= 4:
        assert secret not in text
        assert base64.b64encode(secret.encode()).decode() not in text
    assert str(number) not in text
    if done.value.code == ExitStatus.OK:
        assert "visible-value" in text


def test_tampered_sops_file_fails_only_its_deployment(
    secret_repo: Repo, age_key: AgeIdentity, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret_repo.write("deployments/c/apps/other/deployment.yaml", "apps: [{template: svc}]\n")
    path = secret_repo.root / "deployments/c/apps/d/values.sops.yaml"
    text = path.read_text()
    start = text.index("data:") + len("data:")
    flipped = "A" if text[start] != "A" else "B"
    path.write_text(text[:start] + flipped + text[start + 1 :])
    code, _ = render_out(secret_repo, tmp_path / "out")
    assert code == ExitStatus.RENDER_FAILED
    index = json.loads((tmp_path / "out/index.json").read_text())
    status = {(r["deployment"], r["release"]): r["status"] for r in index["releases"]}
    assert status == {("d", "*"): "error", ("other", "svc"): "rendered"}
    error = next(r["error"] for r in index["releases"] if r["deployment"] == "d")
    assert "deployments/c/apps/d/values.sops.yaml: cannot decrypt" in error
    assert "hunter2" not in error + capsys.readouterr().err


def test_same_shape_secret_change_still_shows_as_a_change(
    secret_git: GitRepo, age_key: AgeIdentity, capsys: pytest.CaptureFixture[str]
) -> None:
    # "old-a-passw0rd" and "new-a-passw0rd" redact to the same "RED-R-REDACTED".
    sops_file(
        secret_git,
        "deployments/a/apps/d/values.sops.yaml",
        {"db": {"password": "new-a-passw0rd"}},
        age_key,
    )
    report, out = diff_json(secret_git, capsys)
    assert "passw0rd" not in out
    release = next(r for r in report["releases"] if r["cluster"] == "a")
    assert release["status"] == "changed"
    config = next(r for r in release["resources"] if r["kind"] == "ConfigMap")
    assert config["status"] == "changed" and config["secretOnly"] is True
    assert config["diff"] == "" and config["changes"] == []
    with pytest.raises(SystemExit):
        main(["diff", "--repo", str(secret_git.root), "--base", "main"])
    assert "a secret value changed; its redacted form is the same" in capsys.readouterr().out


def test_secret_markers_agree_across_jobs_of_one_ci_run_only(
    secret_repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def secret_file(name: str) -> str:
        render_out(secret_repo, tmp_path / name)
        return (tmp_path / name / "c/d/svc/secret-svc-secret.yaml").read_text()

    monkeypatch.setenv("GITHUB_RUN_ID", "41")
    first, second = secret_file("job-1"), secret_file("job-2")
    assert first == second, "two shards of one run mark equal values equally"
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    assert secret_file("next-run") != first
    monkeypatch.delenv("SOPS_AGE_KEY_FILE")
    # No key material: locally this user's own marker key, so two renders compare;
    # in CI a random key per process, as nothing there may persist a key.
    assert secret_file("keyless-1") == secret_file("keyless-2"), "locally: the user's own key"
    monkeypatch.setenv("CI", "true")
    assert secret_file("ci-keyless-1") != secret_file("ci-keyless-2"), "CI: random key"


def test_values_command_redacts_unless_asked_and_never_in_ci(
    secret_repo: Repo, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    command = [
        "values",
        str(secret_repo.root),
        "--cluster",
        "c",
        "--deployment",
        "d",
        "--release",
        "svc",
    ]
    with pytest.raises(SystemExit) as done:
        main(command)
    assert done.value.code == ExitStatus.OK
    shown = capsys.readouterr().out
    assert "password: REDACTE-REDAC" in shown and "hunter2" not in shown
    assert "host: pg.example.org" in shown
    with pytest.raises(SystemExit):
        main([*command, "--no-redact"])
    assert "password: hunter2-Sup3r" in capsys.readouterr().out
    monkeypatch.setenv("CI", "true")
    with pytest.raises(SystemExit) as done:
        main([*command, "--no-redact"])
    assert done.value.code == ExitStatus.INVALID_REPOSITORY
    captured = capsys.readouterr()
    assert "hunter2" not in captured.out + captured.err
