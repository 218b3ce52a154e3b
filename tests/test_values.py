"""Values load order and merge semantics of docs/values.md, checked on what Helm received."""

from __future__ import annotations

from conftest import Repo, received_values

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
    assert atlas["cwd"] == "."
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
