"""One definition of the orders a listing takes: the engine's type, the stores' SQL, REST's
schema."""

from memstream._types import ORDERS
from memstream.server.models import ListRequest
from memstream.store.parts.common import _ORDERS


def test_every_order_has_its_sql_and_rest_takes_it():
    assert tuple(_ORDERS) == ORDERS
    for order in ORDERS:
        assert ListRequest(order=order).order == order
