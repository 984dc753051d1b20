"""Lines set like headings that are never sections, each with the reason the review shows."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from treerag_core.base.text_rules import heading_numbering

_CHECK_BOXES = frozenset("☒☐☑□■✓✔✗✘")
REPEATED_PAGES = 3  # the same heading on this many pages is a running title, not a section
_SEC_COVER = re.compile(r"SECURITIES\s+AND\s+EXCHANGE\s+COMMISSION", re.I)
_SPACES = re.compile(r"\s+")
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
# A table's column head: a period or a date ("Year Ended December 31, 2019", "AS OF MAY 31,
# 2019", "Three Months Ending", "Quarter to Date"), never a section's name.
_PERIOD = re.compile(
    rf"^(?:(?:as\s+of|as\s+at|at|for\s+the|fiscal)\s+)?(?:"
    r"(?:fiscal\s+)?(?:years?|quarters?|(?:three|six|nine|twelve|\d{1,2})\s+months?|months?"
    r"|weeks?)\s+(?:ended|ending)\b.*"
    rf"|{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}"
    r"|(?:quarter|year)\s+to\s+date)$",
    re.I,
)
# A note under a table or a pointer to another place: "* Not meaningful", "Note: Columns may
# not add", "See footnotes at end of schedule", "Refer to Note 4" (not "See others succeed").
_NOTE_LINE = re.compile(
    r"^(?:[*†‡]|notes?:\s*\S|(?:see|refer\s+to)\s+(?:\w+\s+){0,2}(?:notes?|footnotes?|pages?"
    r"|tables?|schedules?|exhibits?|items?|sections?|reconciliations?)\b)",
    re.I,
)
# A contents page's column head ("Page", "Page No.").
_PAGE_HEAD = re.compile(r"^page(?:\s+(?:no\.?|number|#))?$", re.I)
# A signature block's line ends in the signer's office ("Chief Financial Officer", "President,
# Chief Executive Officer and Director", "(Principal Accounting Officer)") or labels a group
# of signers ("DIRECTORS:").
_OFFICE = re.compile(
    r"\b(?:officers?|presidents?|directors?|chairman(?:\s+of\s+the\s+board)?|treasurer"
    r"|controller)\)?:?$",
    re.I,
)
# "/s/ MARK G. PARKER" (up to the next cell): the name a signature line signs.
_SIGNED_NAME = re.compile(r"/s/\s*([^|]+)", re.I)
# A legal name alone, in capitals ("ACME HOLDINGS, INC.") or "... and Subsidiaries": a letterhead
# over statements or the registrant in a signature block ("Acme, Inc." in mixed case may head a
# note's section on an acquired company).
_LEGAL_SUFFIX = r"(?:inc|incorporated|corp|corporation|plc|llc|l\.p|ltd|limited|n\.v|s\.a)\.?"
_LETTERHEAD = re.compile(
    rf"^[\w&.,'’ -]+?,?\s+{_LEGAL_SUFFIX}(?:\s+and\s+(?:its\s+)?subsidiaries)?$"
    r"|^[\w&.,'’ -]+\s+and\s+(?:its\s+)?subsidiaries$",
    re.I,
)
_DOCUMENT_TITLE = re.compile(r"^(?:certification|report|consent|letter)\b", re.I)
# A sentence ends in a lower-case word and a period ("Our stock price is volatile."), unlike a
# title ending in an abbreviation ("Acme Co.").
_SENTENCE_END = re.compile(r"\s[a-z]{2,}\.$")
# Half of a line wrapped into two blocks: it opens on a plain lower-case word ("segment of
# business") or stops on an article, a conjunction or a preposition that needs a word after
# it ("Sales to customers by", "Fair Value at", "For" above a signer). Not "in", "on",
# "after": "Mid-Year Check In", "Days before and after" are Markdown headings of the eval sets.
_LOWER_START = re.compile(r"^[a-z]+\s")
_OPEN_END = re.compile(
    r"(?:^|\s)(?:of|and|or|by|the|to|a|an|for|with|from|at|as|than|per|into|via)$", re.I
)
# A letter's salutation, a header field or a signature: "Dear Sir or Madam", "From: Acme
# Ltd", "Attention: Ms Roe", "/s/ Jane Roe".
_LETTER = re.compile(r"^(?:dear\s|(?:from|to|attn\.?|attention|cc|re|subject)\s*:)|/s/", re.I)
# A press release's distribution line: "FOR IMMEDIATE RELEASE", "Embargoed until 8 a.m.".
_RELEASE = re.compile(r"^(?:for\s+(?:immediate\s+)?release|embargoed)\b", re.I)
# Text quoted from another document opens on a quotation mark: an amendment's replacement
# clause ("“17.3 Leverage Ratio"), not a section of the document quoting it.
_QUOTED = re.compile(r"^[“„\"«]")
# A defined term and its meaning ("Final Maturity Date means 15 May 2026", "Facility Agent
# shall mean"): two capitalised words or more, so a sentence's "This means that" is not one.
_DEFINITION = re.compile(r"^[A-Z][\w’'-]*(?:\s+[A-Z][\w’'-]*){1,5}\s+(?:means|shall\s+mean)\s+\S")
# A form's field and its date ("Amendment Effective Date: 30 June 2023", "Date: May 5, 2023").
_DATED_FIELD = re.compile(
    rf"^[^:]{{1,60}}:\s*(?:\d{{1,2}}\s+{_MONTH}\s+\d{{4}}|{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}"
    r"|\d{1,2}/\d{1,2}/\d{2,4})$",
    re.I,
)
# One name in a list of names: one to four capitalised words ("Craig Jelinek", "and Costco").
_NAME = re.compile(r"^(?:and\s+)?[A-Z][\w.’'-]*(?:\s+[A-Z][\w.’'-]*){0,3}$")
# A table's units, closing its caption: "(in thousands, except for percentages)", "($ in millions)".
_UNITS = re.compile(
    r"\((?:[^()]*\s)?(?:\$\s*)?in\s+(?:thousands|millions|billions)\b[^()]*\)$", re.I
)
# A blank line to sign on: underscores only.
_SIGNATURE_RULE = re.compile(r"^\s*_{5,}\s*$")
NAME_LIST = 5  # a title names at most a few things; five names or more is a list of parties


def line_reason(text: str) -> str | None:
    """Why a heading-like line is not a section, from its text alone (None: it may be one)."""
    if any(ch in _CHECK_BOXES for ch in text):
        return "check-box line"
    stripped = text.strip()
    if stripped.startswith("(") and stripped.endswith(")") and heading_numbering(stripped) is None:
        return "parenthetical line (units, 'Unaudited')"
    if stripped.endswith((":", "：")) and not stripped.isupper():
        return "label ending in a colon (a table or list label)"
    if _PERIOD.match(stripped):
        return "a period or date (a table's column head)"
    if _NOTE_LINE.match(stripped):
        return "a note or a pointer ('*', 'Note:', 'See', 'Refer to')"
    if _PAGE_HEAD.match(stripped):
        return "a contents column head ('Page')"
    if _LETTERHEAD.match(stripped) and (stripped.isupper() or "subsidiaries" in stripped.lower()):
        return "a company's name alone (a letterhead or a signer)"
    numbered = heading_numbering(stripped) is not None
    if not numbered and len(stripped.split()) >= 4 and _SENTENCE_END.search(stripped):
        return "a sentence (ends in a period)"
    if _LETTER.search(stripped):
        return "a letter's salutation, header field or signature ('Dear', 'From:', '/s/')"
    if _RELEASE.match(stripped):
        return "a press release's distribution line ('For immediate release')"
    if _QUOTED.match(stripped):
        return "quoted text (opens on a quotation mark): another document's clause"
    if _DEFINITION.match(stripped):
        return "a definition ('X means ...')"
    if _DATED_FIELD.match(stripped):
        return "a form's field and its date ('Effective Date: 30 June 2023')"
    if name_list(stripped):
        return f"a list of {NAME_LIST} or more names (parties or signers)"
    if not numbered and (_LOWER_START.match(stripped) or _OPEN_END.search(stripped)):
        return "half a wrapped line (opens lower-case or ends in 'of', 'by', 'at')"
    return None


def name_list(text: str) -> bool:
    """Whether a line is a comma list of `NAME_LIST` or more capitalised names ("Galanti, Craig
    Jelinek, Richard Libenson, ... and Costco"): a wrapped line of parties, not a title."""
    parts = [p.strip() for p in text.split(",")]
    return len(parts) >= NAME_LIST and all(_NAME.match(p) for p in parts)


def units_caption(text: str) -> bool:
    """Whether a line ends in a table's units ("Revenue (in thousands)"): a caption when it
    stands under running text (a statement's title opening its page carries units too)."""
    return bool(_UNITS.search(text.strip()))


def signature_rule(text: str) -> bool:
    """Whether a line is a blank signature line ("_____"); the short line under it is the signer."""
    return bool(_SIGNATURE_RULE.match(text))


def signer_office(text: str) -> bool:
    """Whether a line names a signer's office; only on a signed page ('/s/') is it one, since
    "Director" alone may as well head a job family's section."""
    stripped = text.strip()
    return bool(_OFFICE.search(stripped)) and not _DOCUMENT_TITLE.match(stripped)


def signers(lines: Iterable[str]) -> frozenset[str]:
    """Keys of the names a page's signature lines sign ("/s/ MARK G. PARKER")."""
    return frozenset(key(m.group(1)) for text in lines for m in _SIGNED_NAME.finditer(text))


def signer_name(text: str, names: frozenset[str]) -> bool:
    """Whether a line is a signer's name alone, as signed on its page ("Mark G. Parker" under
    "/s/ MARK G. PARKER"): a person's name, not a section."""
    return key(text) in names


def key(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def repeated(texts_by_page: Sequence[tuple[int, str]]) -> set[str]:
    """Keys of heading texts found on `REPEATED_PAGES` or more pages (company-name lines above
    every statement, '(continued)' titles): a running title, not a section."""
    pages: dict[str, set[int]] = {}
    for page, text in texts_by_page:
        pages.setdefault(key(text), set()).add(page)
    return {k for k, ps in pages.items() if len(ps) >= REPEATED_PAGES}


def is_sec_cover(first_page_text: str) -> bool:
    """An SEC form's cover page (10-K, 10-Q, 8-K): it names the Commission."""
    return bool(_SEC_COVER.search(first_page_text))


def summary(reasons: Sequence[tuple[str, str]], examples: int = 3) -> list[str]:
    """One review note per reason: how many lines were dropped, and a few of them."""
    by_reason: dict[str, list[str]] = {}
    for reason, text in reasons:
        by_reason.setdefault(reason, []).append(text)
    notes = []
    for reason, n in Counter(r for r, _ in reasons).most_common():
        shown = "; ".join(f"'{t[:50]}'" for t in by_reason[reason][:examples])
        more = " ..." if n > examples else ""
        notes.append(f"not a section ({reason}): {n} line(s), e.g. {shown}{more}")
    return notes
