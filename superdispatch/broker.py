"""The embedded broker: kombu's filesystem transport, with each message written atomically.

kombu creates a message's file and then writes it, so a worker listing the folder at that
moment can take the file while it is still empty and stop on the unreadable message. Here a
message is written under a name no reader takes, then renamed into the queue in one step.
"""
from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
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
