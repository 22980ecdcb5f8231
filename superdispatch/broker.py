"""The brokers' transports: kombu's own, each with one flaw of it mended.

The embedded broker (no REDIS_URL) is kombu's filesystem transport, with each message
written atomically. kombu creates a message's file and then writes it, so a worker listing
the folder at that moment can take the file while it is still empty and stop on the
unreadable message. Here a message is written under a name no reader takes, then renamed
into the queue in one step.

With Redis, a worker that loses the broker while it holds unacknowledged messages (one
reserved beside the task it runs) must not stop. Celery 5.7 first collects the lost
connection, which detaches the transport from its connection's parameters, and then closes
it, which closes the channel again and restores those messages through a new client built
from the parameters that are gone: the worker ends on an AttributeError ("Unrecoverable
error"). Here a channel keeps the parameters it was opened with, so the restore is tried
(and fails quietly while Redis is still down: the broker redelivers after the visibility
timeout) and the worker goes on to reconnect.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, redis
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

PARTIAL = ".part"  # a reader takes only names ending in `.<queue>.msg`


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        try:
            with open(final + PARTIAL, "wb") as out:
                out.write(str_to_bytes(dumps(payload)))
            os.replace(final + PARTIAL, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add a message to {self.data_folder_out!r}") from exc


class Transport(filesystem.Transport):
    Channel = Channel


class RedisChannel(redis.Channel):
    def _connparams(self, asynchronous=False):
        # First read when the channel opens (its client pings), while the transport still
        # knows its connection; after that, the same parameters however the connection fares.
        known = self.__dict__.setdefault("_known_connparams", {})
        if asynchronous not in known:
            known[asynchronous] = super()._connparams(asynchronous=asynchronous)
        return dict(known[asynchronous])


class RedisTransport(redis.Transport):
    Channel = RedisChannel
