"""The actor runtime and the actors that own checkout sessions and subscriptions."""

from ._runtime import ActorHost, Behaviour, Message

__all__ = ["ActorHost", "Behaviour", "Message"]
