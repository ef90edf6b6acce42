"""The code generators behind ``okt gen``: resource wrappers, CRDs and RBAC, plus the kind dictionary.

Installed as ``okt.codegen``: the folder sits at the top of the repository, and ``okt/codegen`` is a link to it, so
setuptools, mypy and import-linter all see the one name users import. It is a layer between :mod:`okt.cli` (which
mounts :data:`okt.codegen.cli.gen` as ``okt gen``) and the runtime: it imports okt's pieces, and nothing in okt below
the command line imports it (an import-linter contract keeps it so). Modules:

* :mod:`okt.codegen.dictionary` — the kind dictionary (``kinds.yaml``) and its ``--dictionary`` extensions;
* :mod:`okt.codegen.manifest` — a child's YAML manifest -> the Jinja2 template of its wrapper;
* :mod:`okt.codegen.resource` — ``okt gen resource``: the generated module and the author's module;
* :mod:`okt.codegen.crd` — ``okt gen crd``: pydantic models -> a structural CustomResourceDefinition;
* :mod:`okt.codegen.rbac` — ``okt gen rbac``: least-privilege ServiceAccount, role and binding;
* :mod:`okt.codegen.manager` — the operator's own Namespace and Deployment;
* :mod:`okt.codegen.deploy` — ``okt gen deploy`` / ``okt gen bundle``: a kustomize tree and an OLM bundle;
* :mod:`okt.codegen.scaffold` — ``okt init`` / ``okt create api``: a new project and a kind more;
* :mod:`okt.codegen.cli` / :mod:`okt.codegen.okt_compat` — the ``okt gen`` commands and OKT's
  ``okt-gen-resource`` spelling;
* :mod:`okt.codegen.errors` — :class:`~okt.codegen.errors.CodegenError`, the one-line error of every generator.
"""
