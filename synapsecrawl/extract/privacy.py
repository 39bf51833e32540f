"""Removing e-mail addresses and phone numbers from text before it is stored.

Each address becomes ``[email]`` and each phone number ``[phone]``: a reader of a snippet sees that something was
there, and scrubbing twice changes nothing more. Addresses are found plain and in their usual disguises; phone
numbers are digit runs with phone punctuation, judged by their shape and the word before them, so dates, versions,
prices, ISBNs and identifiers are kept. The exact rules: docs/architecture.md, "Inside the larger modules";
tests/data/privacy.jsonl holds the cases.
"""

from __future__ import annotations

import re

__all__ = ["EMAIL", "PHONE", "scrub"]

EMAIL = "[email]"
PHONE = "[phone]"

_IMAGE_SUFFIX = re.compile(r"(?i)\.(?:png|jpe?g|gif|svg|webp|avif|ico|bmp)$")
_EMAIL = re.compile(r"(?<![\w.%+-])[\w.%+-]{1,64}@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,24}\b(?!@|:\S|\.[^\W\d_])")
_AT = r"(?:\s*[\[({<]\s*(?i:at|@|małpa)\s*[\])}>]\s*|\s+AT\s+|@)"
_DOT = r"(?:\s*[\[({<]\s*(?i:dot|\.|kropka|punkt|point|punto|ponto)\s*[\])}>]\s*|\s+DOT\s+|\.)"
_HIDDEN_EMAIL = re.compile(
    rf"(?<![\w.+-])[\w.+-]{{1,64}}{_AT}[\w-]+(?:{_DOT}[\w-]+)*{_DOT}[^\W\d_]{{2,24}}\b(?!@|:\S|\.[^\W\d_])"
)

_S = r"[ \u00a0\u2009\u202f]"
_SEP = rf"(?:{_S}?[-\u2010-\u2013./]{_S}?|{_S})"
_PAREN = r"\(\d{1,5}\)"
_PHONE = re.compile(
    rf"(?<![\w#@&=/+\-.,\]])(?<!\w[-.,])"
    rf"(?:\(\+\d{{1,4}}\){_S}?|\+{_S}?)?(?:{_PAREN}{_S}?)?\d+(?:{_SEP}\d+|{_SEP}?{_PAREN}{_S}?\d+)*"
    r"(?![\w@]|[.,/\-]\w)"
)
_PHONE_WORD = re.compile(
    r"(?i)(?:\b(?:tel|tél|t[eé]l[eé]phone|tel[eé]fono|telefon\w*|phone|fon|fax|call|mobile?|mob|cell|handy|"
    r"whatsapp|sms|tlf|tfn|hotline|helpline|infolinia|dial|zadzwoń|dzwoń|appel\w*|llam\w*|chiam\w*|anrufen|"
    r"ruf|kom)\b|[☎📞])"
    r"(?:[\s.:;,/()#*\u2013\u2014-]*(?:us|me|at|on|to|no|nr|number|numer|nummer|nº|n°)\b){0,3}"
    r"[\s.:;,/()#*\u2013\u2014-]*$"
)
_ID_WORD = re.compile(
    r"(?i)\b(?:isbn(?:-1[03])?|issn|ean|order|invoice|inv|ref|reference|id|sku|account|acct|iban|tracking|"
    r"serial|version|ver|build|doi|case|ticket|zip|postcode|postal|no|nr|nº|number|krs|nip|regon|pesel|"
    r"vat|ust-id|siren|siret|ein|ssn)\W{0,4}$"
)
_DATE = re.compile(
    r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}"
    r"|(?:1[89]|20)\d\d(?:[- /\u2013](?:1[89]|20)\d\d)+"
)
_IP = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_THOUSANDS = re.compile(r"[1-9]\d{0,2}(?:[ .\u00a0\u2009\u202f]\d{3})+")
_NANP = ([3, 3, 4], [1, 3, 3, 4])


def _isbn(digits: str) -> bool:
    if len(digits) == 10:
        return sum((10 - i) * int(d) for i, d in enumerate(digits)) % 11 == 0
    if len(digits) == 13 and digits.startswith(("978", "979")):
        return sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(digits)) % 10 == 0
    return False


def _is_national(number: str, groups: list[str]) -> bool:
    """A number with no country code and no phone word before it."""
    digits = "".join(groups)
    shape = [len(g) for g in groups]
    if _THOUSANDS.fullmatch(number) or not 9 <= len(digits) <= 12:
        return False
    if (len(groups) > 2 and shape[-1] == 1) or (_isbn(digits) and (len(groups) == 1 or len(digits) == 13)):
        return False  # ISBN: a check digit last, or a valid plain one
    if "." in number and min(shape) < 2:
        return False  # version numbers
    if number.startswith(("0", "(")):
        return True
    return shape in _NANP or (len(shape) >= 3 and shape[-1] == 4 and " " not in number)


def _is_phone(number: str, before: str) -> bool:
    groups = re.findall(r"\d+", number)
    count = sum(len(g) for g in groups)
    if not 6 <= count <= 15 or _DATE.fullmatch(number) or _IP.fullmatch(number):
        return False
    keyword = bool(_PHONE_WORD.search(before.replace(PHONE, "0")))  # as before scrubbing
    if not keyword and _ID_WORD.search(before):
        return False
    if number.startswith(("+", "(+")) or (number.startswith("00") and len(groups) > 1):
        return count >= 8
    if keyword:
        return not _THOUSANDS.fullmatch(number) or (count >= 9 and len(groups[0]) == 3)
    return _is_national(number, groups)


def _scrub_phones(text: str) -> str:
    out: list[str] = []
    last = 0
    for match in _PHONE.finditer(text):
        number = match.group()
        start = match.start()
        if len(number) >= 6 and _is_phone(number, text[max(0, start - 32) : start]):
            out.append(text[last:start])
            out.append(PHONE)
            last = start + len(number)
    out.append(text[last:])
    return "".join(out)


def _email_or_keep(match: re.Match[str]) -> str:
    found = match.group()
    return found if _IMAGE_SUFFIX.search(found) else EMAIL


def scrub(text: str) -> str:
    """`text` with e-mail addresses and phone numbers replaced by placeholders."""
    if "@" in text:
        text = _EMAIL.sub(_email_or_keep, text)
    text = _HIDDEN_EMAIL.sub(_email_or_keep, text)
    return _scrub_phones(text)
