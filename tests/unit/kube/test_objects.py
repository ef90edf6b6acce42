"""The JSON-tree copy every reconcile makes of objects and conditions: equal, sharing nothing mutable."""

from __future__ import annotations

import collections
import json

from okt.kube import objects


def test_a_json_copy_equals_its_tree_and_shares_nothing_mutable_with_it() -> None:
    tree = {"spec": {"ports": [{"port": 80}], "args": ("-m", {"n": 1})}, "replicas": 2, "name": "x", "none": None}
    copied = objects.json_copy(tree)
    assert json.dumps(copied) == json.dumps(tree)
    copied["spec"]["ports"][0]["port"] = 81
    copied["spec"]["args"][1]["n"] = 2
    assert tree["spec"]["ports"][0]["port"] == 80
    assert tree["spec"]["args"][1] == {"n": 1}


def test_a_json_copy_copies_dict_and_list_subclasses_as_plain_containers() -> None:
    tree = collections.OrderedDict(a=collections.UserList([1]), b=[collections.OrderedDict(c=[2])])
    copied = objects.json_copy({"tree": tree})
    assert copied == {"tree": {"a": collections.UserList([1]), "b": [{"c": [2]}]}}
    copied["tree"]["b"][0]["c"].append(3)
    assert tree["b"][0]["c"] == [2]
