"""The source of a converting operator (Gadget, v1alpha1 ``colour`` ↔ v1beta1 ``color``), written to a file so that
``okt run`` and ``okt gen`` load it as they load a user's: one reconciler, one group per test so CRDs never clash."""

from __future__ import annotations

import pathlib
import textwrap


def gadget_operator(directory: pathlib.Path, group: str, *, stored_model: bool = False) -> pathlib.Path:
    """``gadget_operator.py`` in ``directory`` for the group ``group``; ``stored_model``: v1beta1 has a spec model
    too (its converter then receives a model, not a mapping). Returns the file."""
    stored = "spec_model = GadgetSpec" if stored_model else ""
    colour = "spec.color" if stored_model else 'spec["color"]'
    source = directory / "gadget_operator.py"
    source.write_text(
        textwrap.dedent(
            f"""
            import pydantic
            import okt


            class GadgetSpecAlpha(pydantic.BaseModel):
                colour: str


            class GadgetSpec(pydantic.BaseModel):
                color: str


            class Gadgets(okt.Reconciler):
                api_version = "{group}/v1beta1"
                kind = "Gadget"
                plural = "gadgets"
                {stored}
                spec_models = {{"v1alpha1": GadgetSpecAlpha}}
                converters = {{
                    ("v1alpha1", "v1beta1"): lambda spec: GadgetSpec(color=spec.colour),
                    ("v1beta1", "v1alpha1"): lambda spec: GadgetSpecAlpha(colour={colour}),
                }}
            """
        )
    )
    return source
