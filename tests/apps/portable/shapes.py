"""A sibling module pickled by value: its own NamedTuple and function ship as source too."""

import collections

Corner = collections.namedtuple("Corner", ["width", "height"], defaults=[1.0])


def area(corner):
    return corner.width * corner.height
