"""`ctxpane tap`: a local OpenAI-compatible reverse proxy that records another program's requests.

server.py forwards (aiohttp in, httpx out), recorder.py records off the path of the bytes (keeping.py saves
its files and lets go of memory, bodies.py reads the bodies), conversations.py groups requests and finds what
the client itself cut. No Textual here.
"""
