"""The decider's world (tests/unit/decider_world.py) as a fixture for the decider's tests."""

from decider_world import cluster  # noqa: F401  # pylint: disable=unused-import
