"""Values load order and merge semantics of docs/values.md, checked on what Helm received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, received_values

from reviewer import values
from reviewer.discover import HierarchySource
from reviewer.errors import ConfigError
from reviewer.gotmpl import TemplateRenderer
from reviewer.values import Layer, NoSecrets, ValuesEntry, ValuesLoader

# One key per level: each level overrides the key "winner" and sets its own key,
# so one rendering shows both the precedence and that every level was read.
LEVELS = {
    "templates/app/helmfile.yaml.gotmpl": """\
        releases:
          - name: app
            chart: ../../charts/dump
            values:
              - template.yaml
              - {winner: template-inline, templateInline: true}
        """,
    "templates/app/template.yaml": "winner: template-file\ntemplateFile: true\n",
    "deployments/global.values.yaml": "winner: global\nglobal: true\n",
    "deployments/grp/group.values.yaml": "winner: group\ngroup: true\n",
    "deployments/grp/c1/cluster.values.yaml": "winner: cluster\ncluster: true\n",
    "deployments/grp/c1/apps/d/deployment.yaml": """\
        apps:
          - template: app
            values: [instance.yaml]
        """,
    "deployments/grp/c1/apps/d/instance.yaml": "winner: instance\ninstance: true\n",
    "deployments/grp/c1/apps/d/values.yaml": "winner: deployment\ndeployment: true\n",
}


def render_values(repo: Repo) -> dict[str, object]:
    return received_values(repo.render(), "grp/c1", "d", "app")


def test_every_level_is_read_and_deployment_level_wins(repo: Repo) -> None:
    repo.write_all(LEVELS)
    values = render_values(repo)
    assert values["winner"] == "deployment"
    for key in ("templateFile", "templateInline", "instance", "global", "group", "cluster"):
        assert values[key] is True, key
    assert values["chartDefault"] == "from-chart"


def test_precedence_step_by_step(repo: Repo) -> None:
    """Removing the highest level each time exposes the next one down."""
    repo.write_all(LEVELS)
    order = [
        ("deployments/grp/c1/apps/d/values.yaml", "cluster"),
        ("deployments/grp/c1/cluster.values.yaml", "group"),
        ("deployments/grp/group.values.yaml", "global"),
        ("deployments/global.values.yaml", "instance"),
    ]
    for path, expected in order:
        (repo.root / path).unlink()
        assert render_values(repo)["winner"] == expected, f"without {path}"
    repo.write("deployments/grp/c1/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    assert render_values(repo)["winner"] == "template-inline"


def test_nested_groups_outermost_first(repo: Repo) -> None:
    repo.write("deployments/a/group.values.yaml", "winner: outer\nouter: true\n")
    repo.write("deployments/a/b/group.values.yaml", "winner: inner\n")
    repo.write("deployments/a/b/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    values = received_values(repo.render(), "a/b/c", "d", "app")
    assert values["winner"] == "inner"
    assert values["outer"] is True


def test_within_a_level_yaml_beats_sops_and_gotmpl_beats_yaml(repo: Repo) -> None:
    repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    repo.write("deployments/c/cluster.values.yaml", "a: yaml\nb: yaml\n")
    repo.write("deployments/c/cluster.values.yaml.gotmpl", "b: gotmpl-saw-{{ .Values.a }}\n")
    values = received_values(repo.render(), "c", "d", "app")
    assert values["a"] == "yaml"
    assert values["b"] == "gotmpl-saw-yaml"


def test_deep_merge_lists_replace_and_null_drops_chart_default(repo: Repo) -> None:
    repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    repo.write("deployments/global.values.yaml", "map: {a: 1, b: 1}\nlist: [1, 2, 3]\n")
    repo.write(
        "deployments/c/cluster.values.yaml",
        "map: {b: 2, c: 2}\nlist: [9]\nnested: {drop: null}\nchartDefault: null\n",
    )
    values = received_values(repo.render(), "c", "d", "app")
    assert values["map"] == {"a": 1, "b": 2, "c": 2}
    assert values["list"] == [9]
    assert values["nested"] == {"keep": "chart"}
    assert "chartDefault" not in values


def test_hierarchy_gotmpl_sees_hierarchy_up_to_itself(repo: Repo) -> None:
    repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    repo.write("deployments/global.values.yaml", "domain: example.org\n")
    repo.write(
        "deployments/global.values.yaml.gotmpl",
        'fromGlobal: "{{ .Values.domain }}|{{ .Values.atlas.deployment.clusterName }}|'
        '{{ .Values.clusterOnly | default "unset" }}"\n',
    )
    repo.write("deployments/c/cluster.values.yaml", "clusterOnly: later\n")
    values = received_values(repo.render(), "c", "d", "app")
    assert values["fromGlobal"] == "example.org|c|unset"


def test_release_gotmpl_sees_values_so_far_overlaid_by_hierarchy(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        """\
        releases:
          - name: app
            chart: ../../charts/dump
            values:
              - {color: template, size: small}
              - derived.yaml.gotmpl
        """,
    )
    repo.write(
        "templates/app/derived.yaml.gotmpl",
        'derived: "{{ .Values.color }}-{{ .Values.size }}-{{ .Values.atlas.instance.name }}"\n',
    )
    repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: app, name: blue}]\n")
    repo.write("deployments/c/cluster.values.yaml", "color: cluster\n")
    values = received_values(repo.render(), "c", "d", "blue-app")
    assert values["derived"] == "cluster-small-blue"


def test_instance_values_files_are_deployment_relative_and_can_be_gotmpl(repo: Repo) -> None:
    repo.write(
        "deployments/c/apps/d/deployment.yaml",
        "apps: [{template: app, values: [conf/extra.yaml.gotmpl, {inline: 1}]}]\n",
    )
    repo.write(
        "deployments/c/apps/d/conf/extra.yaml.gotmpl", "extra: '{{ .Values.inline | default 0 }}'\n"
    )
    values = received_values(repo.render(), "c", "d", "app")
    assert values["extra"] == "0"  # the inline map comes later, so the file cannot see it
    assert values["inline"] == 1


def test_atlas_cannot_be_overridden_by_values(repo: Repo) -> None:
    repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    repo.write("deployments/c/cluster.values.yaml", "atlas: {cwd: /evil, injected: true}\n")
    atlas = received_values(repo.render(), "c", "d", "app")["atlas"]
    assert atlas["cwd"] == "/repo"
    assert "injected" not in atlas
    assert atlas["instance"] == {"template": "app", "name": "app", "namespace": None}
    assert atlas["appTemplates"] == "templates"
    assert atlas["deploymentDefinitions"] == "deployments"


def test_yaml_means_what_helm_makes_of_it(repo: Repo) -> None:
    repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    repo.write("deployments/c/cluster.values.yaml", "flag: on\noctal: 010\nquoted: 'on'\n")
    values = received_values(repo.render(), "c", "d", "app")
    assert values["flag"] is True
    assert values["octal"] == 8
    assert values["quoted"] == "on"


def test_set_and_set_string_apply_after_template_values(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        """\
        releases:
          - name: app
            chart: ../../charts/dump
            values: [{image: {tag: from-values}, count: 1}]
            set:
              - {name: image.tag, value: "from,set"}
              - {name: count, value: 3}
            setString:
              - {name: version, value: 1.10}
        """,
    )
    repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    values = received_values(repo.render(), "c", "d", "app")
    assert values["image"] == {"tag": "from,set"}
    assert values["count"] == 3
    assert values["version"] == "1.1"  # YAML already read 1.10 as a number


def test_missing_hierarchy_files_are_skipped_silently(repo: Repo) -> None:
    repo.write("deployments/g/c/apps/d/deployment.yaml", "apps: [{template: app}]\n")
    snapshot = repo.render()
    assert snapshot.failed == []


# --- the stage alone: merging, loading layers, validating entries -----------------------------


class Placeholders:
    """A secrets loader that shows which files it was asked for."""

    def load(self, path: Path, *, source: str) -> dict[str, Any]:
        return {"secretFrom": source}


def loader(root: Path) -> ValuesLoader:
    return ValuesLoader(root=root, templates=TemplateRenderer(), secrets=Placeholders())


def test_merge_is_deep_and_higher_scalars_lists_and_nulls_replace() -> None:
    lower = {"a": {"b": 1, "c": [1, 2]}, "keep": True, "drop": {"x": 1}}
    higher = {"a": {"c": [3]}, "drop": None, "new": 1}
    assert values.merge(lower, higher) == {
        "a": {"b": 1, "c": [3]},
        "keep": True,
        "drop": None,
        "new": 1,
    }
    assert lower == {"a": {"b": 1, "c": [1, 2]}, "keep": True, "drop": {"x": 1}}, "unchanged"


def test_combine_merges_layers_in_order_and_with_atlas_forces_the_context() -> None:
    layers = [Layer("one", "global", {"a": 1, "b": 1}), Layer("two", "cluster", {"a": 2})]
    assert values.combine(layers) == {"a": 2, "b": 1}
    assert values.with_atlas({"atlas": "mine", "a": 1}, {"cwd": "."}) == {
        "atlas": {"cwd": "."},
        "a": 1,
    }


def test_hierarchy_layers_come_lowest_first_and_plain_only_skips_sops(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("deployments/global.values.yaml", "level: global\n")
    repo.write("deployments/g/group.values.sops.yaml", "encrypted: true\n")
    repo.write("deployments/g/group.values.yaml.gotmpl", "seen: {{ .Values.level }}\n")
    repo.write("deployments/g/c/apps/web/deployment.yaml", "apps: []\n")
    repo.write("deployments/g/c/apps/web/values.yaml", "level: deployment\n")
    (cluster,) = HierarchySource().discover(tmp_path).clusters
    web = cluster.deployments[0]
    layers = loader(tmp_path).hierarchy(cluster, web, atlas={}, plain_only=False)
    assert [(layer.source, layer.level, layer.secret) for layer in layers] == [
        ("deployments/global.values.yaml", "global", False),
        ("deployments/g/group.values.sops.yaml", "group g", True),
        ("deployments/g/group.values.yaml.gotmpl", "group g", False),
        ("deployments/g/c/apps/web/values.yaml", "deployment web", False),
    ]
    assert layers[1].values == {"secretFrom": "deployments/g/group.values.sops.yaml"}
    assert layers[2].values == {"seen": "global"}
    plain = loader(tmp_path).hierarchy(cluster, web, atlas={}, plain_only=True)
    assert [layer.source for layer in plain] == [
        layers[0].source,
        layers[2].source,
        layers[3].source,
    ]


def test_release_gotmpl_sees_earlier_entries_under_the_hierarchy(tmp_path: Path) -> None:
    Repo(tmp_path).write("t/v.yaml.gotmpl", "seen: {{ .Values.a }}-{{ .Values.atlas.x }}\n")
    entries = [
        (ValuesEntry("d.yaml", "apps[0].values[0]", "t", inline={"a": "entry"}), "lvl", False),
        (ValuesEntry("d.yaml", "apps[0].values[1]", "t", file="t/v.yaml.gotmpl"), "lvl", False),
        (ValuesEntry("d.yaml", "apps[0].secrets[0]", "t", file="t/s.yaml"), "sec", True),
    ]
    (tmp_path / "t/s.yaml").write_text("x: 1\n")
    layers = loader(tmp_path).release_layers(entries, hierarchy={}, atlas={"x": "atlas"})
    assert [layer.source for layer in layers] == [
        "d.yaml apps[0].values[0]",
        "t/v.yaml.gotmpl",
        "t/s.yaml",
    ]
    assert layers[1].values == {"seen": "entry-atlas"}
    assert layers[2].values == {"secretFrom": "t/s.yaml"} and layers[2].secret
    over = loader(tmp_path).release_layers(entries[:2], hierarchy={"a": "hier"}, atlas={"x": 1})
    assert over[1].values == {"seen": "hier-1"}


def test_a_missing_entry_file_names_the_file_that_lists_it(tmp_path: Path) -> None:
    entry = ValuesEntry("deployments/c/apps/w/deployment.yaml", "apps[0].values[0]", "x", "x/no")
    with pytest.raises(ConfigError) as failure:
        loader(tmp_path).release_layers([(entry, "lvl", False)], hierarchy={}, atlas={})
    assert failure.value.file == "deployments/c/apps/w/deployment.yaml"
    assert failure.value.field == "apps[0].values[0]"


def test_without_a_secrets_loader_sops_files_are_refused_by_name(tmp_path: Path) -> None:
    Repo(tmp_path).write("s.sops.yaml", "a: 1\n")
    plain = ValuesLoader(root=tmp_path, templates=TemplateRenderer(), secrets=NoSecrets())
    with pytest.raises(ConfigError) as failure:
        plain.load_file("s.sops.yaml", context={}, secret=False)
    assert failure.value.file == "s.sops.yaml"


@pytest.mark.parametrize(
    ("items", "allow_inline", "field"),
    [
        ("one.yaml", True, "apps[0].values"),
        ([1], True, "apps[0].values[0]"),
        (["ok.yaml", {"inline": 1}], False, "apps[0].values[1]"),
        (["../../../out.yaml"], True, "apps[0].values[0]"),
    ],
)
def test_entries_name_the_bad_item(
    tmp_path: Path, items: Any, allow_inline: bool, field: str
) -> None:
    with pytest.raises(ConfigError) as failure:
        values.entries(
            items,
            declared_in="d.yaml",
            field="apps[0].values",
            base="a/b",
            root=tmp_path,
            allow_inline=allow_inline,
        )
    assert (failure.value.file, failure.value.field) == ("d.yaml", field)


def test_entries_resolve_files_against_their_base(tmp_path: Path) -> None:
    found = values.entries(
        ["../x.yaml", {"k": 1}],
        declared_in="d.yaml",
        field="f",
        base="a/b",
        root=tmp_path,
        allow_inline=True,
    )
    assert found == [
        ValuesEntry("d.yaml", "f[0]", "a/b", file="a/x.yaml"),
        ValuesEntry("d.yaml", "f[1]", "a/b", inline={"k": 1}),
    ]
    assert (
        values.entries(None, declared_in="d", field="f", base=".", root=tmp_path, allow_inline=True)
        == []
    )


class PathsAsked:
    """A secrets loader that remembers the paths it was asked to read."""

    def __init__(self) -> None:
        self.paths: list[Path] = []

    def load(self, path: Path, *, source: str) -> dict[str, Any]:
        self.paths.append(path)
        return {"secretFrom": source}


def test_a_sops_file_is_read_at_the_path_the_jail_checked(tmp_path: Path) -> None:
    """A symlink inside the checkout is followed once, by the jail: the secrets loader gets
    the checked file, not the link's name to be resolved again."""
    root = tmp_path / "repo"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets" / "real.sops.yaml").write_text("sops: {}\n")
    (root / "linked.sops.yaml").symlink_to("secrets/real.sops.yaml")
    (root / "escaping.sops.yaml").symlink_to(tmp_path / "outside.sops.yaml")
    (tmp_path / "outside.sops.yaml").write_text("sops: {}\n")
    asked = PathsAsked()
    reader = ValuesLoader(root=root, templates=TemplateRenderer(), secrets=asked)
    loaded = reader.load_file("linked.sops.yaml", context={}, secret=True)
    assert loaded == {"secretFrom": "linked.sops.yaml"}
    assert asked.paths == [(root / "secrets" / "real.sops.yaml").resolve()]
    with pytest.raises(ConfigError, match="resolves outside"):
        reader.load_file("escaping.sops.yaml", context={}, secret=True)
    assert len(asked.paths) == 1
