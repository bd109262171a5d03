"""The user's configuration: the policy in force, the settings read once
from the environment, and the install hints for optional extras."""

__all__: list[str] = []
