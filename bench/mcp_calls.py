"""MCP tool-call cost through Hermes: ``Toolbox.execute`` of an MCP tool (JSON parse, schema
validation, the hop from the synchronous agent thread to the background asyncio loop, result to
text, redaction) against the same calls made directly with the ``mcp`` client inside asyncio, on
the same stdio server, in the same run.

    python bench/mcp_calls.py         # prints `mcp_calls ratio X.XX` (target ≤ 1.5×)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_of, report

from hermes.config.mcp import McpServer
from hermes.core.messages import ToolCall
from hermes.tools.builtins import Toolbox
from hermes.tools.mcp import McpHub

SERVER = '''
from mcp.server.mcpserver import MCPServer
app = MCPServer("bench")

@app.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)

app.run("stdio")
'''
CALLS = 200


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "server.py"
        script.write_text(SERVER)
        hub = McpHub({"b": McpServer("b", command=sys.executable, args=(str(script),))}, log_dir=Path(d))
        box = Toolbox([], sources=[hub])
        call = ToolCall("c", "b__add", '{"a": 2, "b": 3}')
        assert box.execute(call).content == "5"

        def ours() -> None:
            for _ in range(CALLS):
                box.execute(call)

        async def direct_session() -> float:
            from mcp import Client, StdioServerParameters
            from mcp.client.stdio import stdio_client

            with open(Path(d) / "direct.log", "a") as errlog:
                async with Client(stdio_client(StdioServerParameters(command=sys.executable, args=[str(script)]),
                                               errlog=errlog)) as client:
                    await client.list_tools()

                    async def calls() -> None:
                        for _ in range(CALLS):
                            await client.call_tool("add", {"a": 2, "b": 3})

                    return min([await _timed(calls) for _ in range(5)])

        try:
            mine = best_of(ours)
        finally:
            hub.close()
        base = asyncio.run(direct_session())
        print(f"mcp_calls: {mine / CALLS * 1e6:.0f} µs per call through Hermes, {base / CALLS * 1e6:.0f} µs direct")
        report("mcp_calls", mine, base, target=1.5)


async def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    import time

    t0 = time.perf_counter()
    await fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
