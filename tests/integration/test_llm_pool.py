"""The SDK's connection pool with R42's cheaper idle probe (issue 26, services/adapters/llm.py `_cheap_idle_probe`):
an idle keep-alive connection is still seen as gone the moment the server closes it, so the next request opens a
new one instead of failing on a dead socket."""

import asyncio

import pytest

pytestmark = pytest.mark.anyio


async def test_an_idle_connection_the_server_closed_is_seen_as_expired_and_replaced():
    import httpx2

    from r42_app.services.adapters.llm import AnthropicLLM

    AnthropicLLM("test", "claude-test", base_url="http://127.0.0.1:9")  # applies the probe
    from httpcore2._backends.anyio import AnyIOStream

    assert getattr(AnyIOStream.get_extra_info, "r42_cached", False)
    writers: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):  # the client closed, or this test did
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            assert (await client.get("/")).text == "ok"
            (connection,) = client._transport._pool.connections
            assert connection.is_idle() and not connection.has_expired()  # alive: kept for the next request
            assert (await client.get("/")).text == "ok" and len(writers) == 1  # ...and reused
            writers[0].close()
            await asyncio.sleep(0.2)
            assert connection.has_expired()  # the server closed it: seen at once
            assert (await client.get("/")).text == "ok" and len(writers) == 2  # a new connection, no error
    finally:
        server.close()
        await server.wait_closed()
