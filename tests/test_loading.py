"""Tests for treerag_core.ingest.loading: decoding, size limits and folder expansion."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EVAL_DIR, skip_unless_ci
from treerag_core.base.errors import FileTooLargeError, InputDocumentError
from treerag_core.ingest.loading import collect_inputs, decode_document, read_document

MB = 1024 * 1024


def test_decodes_utf8_and_strips_a_bom() -> None:
    assert decode_document("# Título\n".encode(), "a.md", MB) == "# Título\n"
    assert decode_document(b"\xef\xbb\xbf# Title\n", "a.md", MB) == "# Title\n"


def test_decodes_gb18030_chinese() -> None:
    text = "# 第一章 总则\n\n第一条 为了保护民事主体的合法权益，制定本法。\n"
    data = text.encode("gb18030")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    assert decode_document(data, "law.md", MB) == text


def test_newlines_match_python_text_mode(tmp_path: Path) -> None:
    data = b"# A\r\n\r\nline one\rline two\n\nend\r"
    path = tmp_path / "mixed.md"
    path.write_bytes(data)
    expected = path.read_text(encoding="utf-8")
    assert decode_document(data, "mixed.md", MB) == expected == "# A\n\nline one\nline two\n\nend\n"
    assert read_document(path, MB) == expected


@pytest.mark.parametrize("data", [b"", b" \n\t\r\n", b"\xef\xbb\xbf", "\u3000\n".encode()])
def test_empty_or_blank_is_rejected(data: bytes) -> None:
    with pytest.raises(InputDocumentError, match=r"^empty\.md: the file is empty"):
        decode_document(data, "empty.md", MB)


def test_binary_is_rejected_with_a_utf16_hint() -> None:
    with pytest.raises(InputDocumentError, match=r"^img\.png: looks binary") as err:
        decode_document(b"\x89PNG\r\n\x1a\n\x00\x00", "img.png", MB)
    assert "UTF-16" not in str(err.value)
    with pytest.raises(InputDocumentError, match="UTF-16"):
        decode_document("# Hi\n".encode("utf-16"), "u16.md", MB)


def test_too_large_names_size_limit_and_how_to_raise_it() -> None:
    with pytest.raises(InputDocumentError) as err:
        decode_document(b"x" * 2000, "big.md", 1000)
    message = str(err.value)
    assert message.startswith("big.md: 2,000 bytes")
    assert "1,000 bytes" in message
    assert "TREERAG_MAX_FILE_MB" in message and "--max-file-mb" in message
    assert "\n" not in message
    # The refusal alone, for a page whose users cannot set the limit themselves.
    assert isinstance(err.value, FileTooLargeError)
    assert (
        err.value.refusal
        == "big.md: 2,000 bytes (2.0 KB) is larger than the limit of 1,000 bytes (1.0 KB)"
    )
    assert message == f"{err.value.refusal}; raise it with TREERAG_MAX_FILE_MB or --max-file-mb"


def test_undecodable_lists_the_encodings_tried() -> None:
    data = b"caf\xe9 au lait \xff\xfe end"  # Latin-1 plus bytes invalid in all three
    with pytest.raises(InputDocumentError) as err:
        decode_document(data, "latin1.md", MB)
    assert str(err.value) == (
        "latin1.md: cannot decode the text (tried utf-8, utf-8-sig, gb18030); save it as UTF-8"
    )


def test_read_document_errors(tmp_path: Path) -> None:
    with pytest.raises(InputDocumentError, match="no such file"):
        read_document(tmp_path / "missing.md", MB)
    with pytest.raises(InputDocumentError, match="is a folder"):
        read_document(tmp_path, MB)
    big = tmp_path / "big.md"
    big.write_bytes(b"y" * 5000)
    with pytest.raises(InputDocumentError, match=r"5,000 bytes .* larger than the limit"):
        read_document(big, 4999)
    assert read_document(big, 5000) == "y" * 5000


def test_eval_docs_read_exactly_like_read_text() -> None:
    docs = sorted(EVAL_DIR.glob("*/docs/*.md"))
    if not docs:
        skip_unless_ci("eval-data test", f"eval docs not found under {EVAL_DIR}")
    for doc in docs:
        assert read_document(doc, 20 * MB) == doc.read_text(encoding="utf-8"), doc.name


def test_collect_inputs_expands_folders_sorted(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    for name in ("z.md", "a.txt", "b/c.markdown", "b/d.MD", "notes.py", ".git/e.md", "b/f.pdf"):
        (tmp_path / name).write_text("x", encoding="utf-8")
    single = tmp_path / "notes.py"
    found = collect_inputs([tmp_path, single, tmp_path / "z.md"])
    rel = [p.relative_to(tmp_path).as_posix() for p in found]
    # .pdf (and .docx, .html) are converted documents now; .py is still not a document.
    assert rel == ["a.txt", "b/c.markdown", "b/d.MD", "b/f.pdf", "z.md", "notes.py"]


def test_collect_inputs_missing_path(tmp_path: Path) -> None:
    with pytest.raises(InputDocumentError, match=r"nope\.md: no such file or folder"):
        collect_inputs([tmp_path / "nope.md"])


def test_fifo_named_md_is_refused_not_hung(tmp_path):
    import os

    from treerag_core.ingest.documents import sources_from

    (tmp_path / "good.md").write_text("# A\n\ntext\n", encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.md")
    with pytest.raises(InputDocumentError, match="FIFO"):
        read_document(tmp_path / "pipe.md", 1000)
    sources, rejected = sources_from([tmp_path], 1000)  # a folder walk reports it too
    assert [s.name for s in sources] == ["good.md"]
    assert [r.name for r in rejected] == ["pipe.md"] and "FIFO" in rejected[0].reason


def test_symlink_loop_is_reported(tmp_path):
    from treerag_core.ingest.documents import sources_from

    (tmp_path / "a.md").symlink_to(tmp_path / "b.md")
    (tmp_path / "b.md").symlink_to(tmp_path / "a.md")
    sources, rejected = sources_from([tmp_path], 1000)
    assert sources == []
    assert sorted(r.name for r in rejected) == ["a.md", "b.md"]
    assert all("symlink loop" in r.reason for r in rejected)


def test_the_uploader_lets_an_over_limit_file_reach_the_app():
    """Streamlit's upload cap (server.maxUploadSize, in config.MB) sits above the per-file
    limit, so a file over the limit reaches the app and is refused with a message naming it
    and the limit (the browser's own refusal is only a mark on the file's chip)."""
    import tomllib
    from pathlib import Path

    from treerag_core.base.config import DEFAULT_MAX_FILE_BYTES, MB
    from treerag_core.ingest.loading import too_large

    config = Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml"
    upload_mb = tomllib.loads(config.read_text(encoding="utf-8"))["server"]["maxUploadSize"]
    assert upload_mb * MB > 2 * DEFAULT_MAX_FILE_BYTES == 40_000_000
    message = str(too_large("big.pdf", 20_689_890, DEFAULT_MAX_FILE_BYTES))
    assert "(20.7 MB)" in message and "(20.0 MB)" in message
