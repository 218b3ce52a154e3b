"""Which helmfile keys an app template may use: honoured, accepted without effect, refused.

The tables `templates` decodes a `helmfile.yaml(.gotmpl)` against; each refusal says why.
"""

from __future__ import annotations

from reviewer import decode, postrender

# Honoured: each is read where `templates` builds a release.
RELEASE_KEYS = (
    "name",
    "chart",
    "version",
    "namespace",
    "values",
    "secrets",
    "set",
    "setString",
    "labels",
    "skipSchemaValidation",
    "directory",
    "kubeVersion",
    "apiVersions",
    *postrender.PATCH_FIELDS,
)
# Accepted and ignored: they change how or whether helmfile deploys, never what Helm renders
# (and the presence of deployment.yaml is the intent to install). Each is still checked for
# the type helmfile requires, so a template that helmfile would refuse is refused here too.
NO_EFFECT_RELEASE_KEYS: dict[str, decode.Decoder] = {
    "condition": decode.string,
    "installed": decode.boolean,
    "installedTemplate": decode.string,
    "createNamespace": decode.boolean,
    "wait": decode.boolean,
    "waitForJobs": decode.boolean,
    "timeout": decode.integer,
    "atomic": decode.boolean,
    "needs": decode.strings,
    "historyMax": decode.integer,
    "cleanupOnFail": decode.boolean,
    "recreatePods": decode.boolean,
    "force": decode.boolean,
    "verify": decode.boolean,
    "devel": decode.boolean,
    "missingFileHandler": decode.string,
    "keyring": decode.string,  # also checked to stay inside the checkout
    "enableDNS": decode.boolean,  # rendering never resolves names either way
    "disableValidation": decode.boolean,
    "disableOpenAPIValidation": decode.boolean,
    "disableValidationOnInstall": decode.boolean,
    "kubeContext": decode.string,
    "skipDeps": decode.boolean,
    "reuseValues": decode.boolean,
    "cascade": decode.string,
    "suppressDiff": decode.boolean,
    "adopt": decode.strings,
    "insecureSkipTLSVerify": decode.boolean,
    "verifyTemplate": decode.string,
    "waitTemplate": decode.string,
    "forceGoGetter": decode.boolean,
    "takeOwnership": decode.boolean,
    "syncReleaseLabels": decode.boolean,
    "deleteWait": decode.boolean,
    "deleteTimeout": decode.integer,
}
# Would change what gets deployed in ways we cannot reproduce exactly: refuse, never ignore.
REJECTED_RELEASE_KEYS = {
    "postRenderer": "the reviewer owns post-processing of rendered manifests",
    "postRendererArgs": "the reviewer owns post-processing of rendered manifests",
    "hooks": "helmfile hooks run commands, which review rendering never does",
    "forceNamespace": "helmfile's experimental forceNamespace is not reproduced; "
    "set the namespace in the chart, or add a NamespaceTransformer under transformers",
    "dependencies": "ad-hoc chart dependencies are fetched at deploy time; "
    "declare them in the chart's Chart.yaml",
    "inherit": "release templates (top-level templates:) are not supported",
    "valuesTemplate": "use values (app templates are already rendered as Go templates)",
    "setTemplate": "use set (app templates are already rendered as Go templates)",
    "env": "helmfile's deprecated env: reads the environment; use set",
    "valuesPathPrefix": "write values paths relative to the template",
}
ACCEPTED_RELEASE_KEYS = (*RELEASE_KEYS, *NO_EFFECT_RELEASE_KEYS)
TOP_KEYS = (
    "bases",
    "commonLabels",
    "environments",
    "helmDefaults",
    "releases",
    "repositories",
    "kubeVersion",
    "apiVersions",
)
# helmDefaults keys: none of these changes what Helm renders under ATLAS (its per-release
# skipSchemaValidation default always overrides the helmDefaults one).
HELM_DEFAULTS: dict[str, decode.Decoder] = {
    **{
        key: NO_EFFECT_RELEASE_KEYS[key]
        for key in (
            "kubeContext",
            "verify",
            "keyring",
            "enableDNS",
            "devel",
            "wait",
            "waitForJobs",
            "timeout",
            "recreatePods",
            "force",
            "atomic",
            "cleanupOnFail",
            "historyMax",
            "createNamespace",
            "skipDeps",
            "reuseValues",
            "cascade",
            "disableValidation",
            "disableOpenAPIValidation",
            "insecureSkipTLSVerify",
            "takeOwnership",
            "syncReleaseLabels",
            "deleteWait",
            "deleteTimeout",
        )
    },
    "skipSchemaValidation": decode.boolean,
    "suppressOutputLineRegex": decode.strings,
    "skipRefresh": decode.boolean,
}
REFUSED_HELM_DEFAULTS = {
    "args": "extra helm arguments cannot be reproduced exactly",
    "postRenderer": REJECTED_RELEASE_KEYS["postRenderer"],
    "postRendererArgs": REJECTED_RELEASE_KEYS["postRendererArgs"],
}
