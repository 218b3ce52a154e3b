"""A small manifests repository (plain YAML, a kustomize overlay, a BOSH manifest) for tests."""

from __future__ import annotations

from conftest import GitRepo

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: {replicas}
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.27
"""

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  ports: [{port: 80}]
"""

BOSH = """\
name: cf
releases:
  - {{name: capi, version: "1.2.3"}}
stemcells:
  - {{alias: default, os: ubuntu-jammy, version: latest}}
update: {{canaries: 1, max_in_flight: 2}}
instance_groups:
  - name: web
    instances: {instances}
    azs: [z1]
    vm_type: small
    stemcell: default
    networks: [{{name: default}}]
    jobs:
      - name: nginx
        release: capi
        properties:
          admin_password: ((admin_password))
  - name: worker
    instances: 1
    azs: [z1]
    vm_type: small
    stemcell: default
    networks: [{{name: default}}]
    jobs: []
variables:
  - {{name: admin_password, type: password}}
"""

BASE = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deployment.yaml]
"""

OVERLAY = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: prod
resources: [../../base]
patches:
  - target: {{kind: Deployment, name: web}}
    patch: |
      - op: replace
        path: /spec/replicas
        value: {replicas}
"""


def write_manifests(
    repo: GitRepo,
    *,
    replicas: int = 2,
    instances: int = 2,
    overlay_replicas: int = 3,
    prefix: str = "",
) -> GitRepo:
    """Plain files under `apps/`, a kustomize tree under `kustomize/`, BOSH under `bosh/`."""
    repo.write(f"{prefix}apps/web/deployment.yaml", DEPLOYMENT.format(replicas=replicas))
    repo.write(f"{prefix}apps/web/service.yaml", SERVICE)
    repo.write(f"{prefix}kustomize/base/deployment.yaml", DEPLOYMENT.format(replicas=1))
    repo.write(f"{prefix}kustomize/base/kustomization.yaml", BASE)
    repo.write(
        f"{prefix}kustomize/overlays/prod/kustomization.yaml",
        OVERLAY.format(replicas=overlay_replicas),
    )
    repo.write(f"{prefix}bosh/cf.yml", BOSH.format(instances=instances))
    return repo
