"""The code generators behind ``okt gen``: resource wrappers, CRDs and RBAC, plus the kind dictionary.

This package sits above :mod:`okt` (it imports okt; okt only mounts :data:`codegen.cli.gen` lazily). Modules:

* :mod:`codegen.dictionary` — the kind dictionary (``kinds.yaml``) and its ``--dictionary`` extensions;
* :mod:`codegen.manifest` — a child's YAML manifest -> the Jinja2 template of its wrapper;
* :mod:`codegen.resource` — ``okt gen resource``: the generated module and the author's module;
* :mod:`codegen.crd` — ``okt gen crd``: pydantic models -> a structural CustomResourceDefinition;
* :mod:`codegen.rbac` — ``okt gen rbac``: least-privilege ServiceAccount, role and binding;
* :mod:`codegen.cli` / :mod:`codegen.okt_compat` — the ``okt gen`` commands and OKT's ``okt-gen-resource`` spelling;
* :mod:`codegen.errors` — :class:`~codegen.errors.CodegenError`, the one-line error of every generator.
"""
