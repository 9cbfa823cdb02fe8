"""A patch file that is a ``git format-patch`` mail, read as ``git am`` (``git mailinfo``) reads
it: a body in ``quoted-printable`` or ``base64`` transfer encoding is decoded (the diff
included), RFC 2047 encoded words of ``Subject:`` and ``From:`` are decoded, and an mbox of
several mails is refused (a patch file is one patch, with one id).

The standard library's ``email`` package does the decoding; it is imported only for a mail
that needs it, so reading a plain patch file imports nothing more.

>>> read_mail(b"Patch-Id: p\\n---\\n", "p.patch")
b'Patch-Id: p\\n---\\n'
>>> mail = (b"From 0123456 Mon Sep 17 00:00:00 2001\\nSubject: x\\n"
...         b"Content-Transfer-Encoding: quoted-printable\\n\\nb =3D 1=\\n0\\n")
>>> read_mail(mail, "p.patch").decode().splitlines()[-1]
'b = 10'
"""

from __future__ import annotations

import re

from compatkit.errors import PatchFormatError

_MAIL_FROM = re.compile(rb"From [0-9a-f]{7,64} ")
_NEXT_MAIL = re.compile(rb"^From [0-9a-f]{7,64} ", re.M)
_BLANK = re.compile(rb"^\r?\n", re.M)
_CTE = b"content-transfer-encoding"
_DECODED = (b"quoted-printable", b"base64")
_WORDS = (b"subject", b"from")  # the headers whose encoded words are decoded


def read_mail(raw: bytes, label: str) -> bytes:
    """``raw`` as ``git am`` reads it: unchanged unless it is a mail that needs decoding."""
    if not _MAIL_FROM.match(raw):
        return raw
    first = raw.find(b"\n") + 1
    if first and (more := len(_NEXT_MAIL.findall(raw, first))):
        raise PatchFormatError(
            f"{label}: holds {more + 1} mails (an mbox); a patch file is one patch: split it "
            "with 'git mailsplit -oDIR FILE' (or run 'git format-patch' without --stdout) and "
            "list each file in the series"
        )
    blank = _BLANK.search(raw, first) if first else None
    end = blank.start() if blank else len(raw)
    headers = _headers(raw[first:end])
    encoding = b"".join(_value(chunk).split()).lower() if (chunk := headers.get(_CTE)) else b""
    decode = encoding in _DECODED
    words = [n for n in _WORDS if b"=?" in headers.get(n, b"")]
    if not decode and not words:
        return raw
    block = raw[first:end]
    if decode:
        block = block.replace(headers[_CTE], b"")
    for name in words:
        block = block.replace(headers[name], _decoded_header(headers[name]))
    body = _decoded_body(raw[first:], label) if decode else raw[end:]
    return raw[:first] + block + (raw[end : blank.end()] if blank and decode else b"") + body


def _headers(block: bytes) -> dict[bytes, bytes]:
    """Lower-case name → the header's lines as written (continuation lines included); the
    first of a repeated header."""
    found: dict[bytes, bytes] = {}
    name = b""
    for line in block.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t") and name:
            found[name] += line
            continue
        head, colon, _ = line.partition(b":")
        name = head.strip().lower() if colon and head.strip() else b""
        if name and name in found:
            name = b""  # a repeated header: the first one counts, as in email's get()
        if name:
            found[name] = line
    return found


def _value(chunk: bytes) -> bytes:
    return chunk.partition(b":")[2]


def _decoded_header(chunk: bytes) -> bytes:
    """``Subject: =?UTF-8?q?...?=`` (maybe folded) as one line of UTF-8."""
    from email.header import decode_header, make_header

    name = chunk.partition(b":")[0]
    text = _value(chunk).decode("ascii", "replace").replace("\r", "").replace("\n", "")
    try:
        value = str(make_header(decode_header(text.strip())))
    except (ValueError, LookupError, UnicodeDecodeError):  # bad words: kept as written
        return chunk
    end = b"\r\n" if chunk.endswith(b"\r\n") else b"\n"
    return name + b": " + value.replace("\n", " ").encode("utf-8", "surrogateescape") + end


def _decoded_body(mail: bytes, label: str) -> bytes:
    """The body of ``mail`` (headers and body, no mbox ``From`` line), transfer-decoded to
    the bytes it stands for; no charset conversion (git am converts the message, never the
    patch)."""
    from email import message_from_bytes
    from email.errors import MessageDefect
    from email.policy import compat32

    message = message_from_bytes(mail, policy=compat32)
    if message.is_multipart():
        raise PatchFormatError(f"{label}: a multipart mail; save the patch as plain text")
    payload = message.get_payload(decode=True)
    if not isinstance(payload, bytes) or any(
        isinstance(d, MessageDefect) and "base64" in type(d).__name__.lower()
        for d in message.defects
    ):
        raise PatchFormatError(f"{label}: its body does not decode as its transfer encoding")
    return payload
