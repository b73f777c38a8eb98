"""`KeyHashPartitioner` remembers each key's hash and places every record where Kafka's default
partitioner (aiokafka's `DefaultPartitioner`, murmur2 like the Java client) places it."""

from __future__ import annotations

import random
import uuid

from aiokafka.partitioner import DefaultPartitioner
from mnemo_events.broker import KeyHashPartitioner


def test_a_keyed_record_goes_where_the_default_partitioner_sends_it() -> None:
    chosen = random.Random(7)
    keys = [str(uuid.UUID(int=chosen.getrandbits(128))).encode() for _ in range(300)]
    keys += [b"", b"a", b"ab", b"abc", b"\xff\x00\x80", bytes(range(256))]
    partitioner, default = KeyHashPartitioner(max_keys=50), DefaultPartitioner()
    for count in (1, 2, 3, 6, 7, 50):
        partitions = list(range(count))
        for key in keys * 2:  # the second time from memory (and past max_keys, recomputed)
            assert partitioner(key, partitions, partitions[:1]) == default(
                key, partitions, partitions[:1]
            )


def test_a_record_without_a_key_goes_to_an_available_partition() -> None:
    partitioner = KeyHashPartitioner()
    assert {partitioner(None, [0, 1, 2, 3], [2]) for _ in range(20)} == {2}
    assert {partitioner(None, [5], []) for _ in range(5)} == {5}
