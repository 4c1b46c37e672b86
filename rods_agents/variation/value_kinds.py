"""Value kinds: a new value keeps the kind of the value it replaces.

The offline plan sampler renames entities (files, folders, people, titles, ids...). A variant reads
as a real task only if the new value is the same kind of thing as the old one: a folder gets a name
a real project folder has, a file keeps its extension and its naming style, a person stays one
person everywhere (first and last name mapped together), a title stays a title, an address an
address, an id keeps its letters and changes its digits. Pools live in
``prompts/bfcl/offline_value_kinds.json``; nothing here draws a random codename.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from rods_agents.analysis import knowledge
from rods_agents.analysis.value_sources import enum_values

PROMPTS_FILE = "bfcl/offline_value_kinds.json"
_EXT = re.compile(r"^(?P<stem>[A-Za-z0-9][A-Za-z0-9_\-]*)\.(?P<ext>[A-Za-z0-9]{1,5})$")
_FULL_NAME = re.compile(r"^[A-Z][a-z]+ [A-Z][a-z]+$")
_NAME = re.compile(r"^[A-Z][a-z]{2,}$")
_TICKER = re.compile(r"^[A-Z]{2,5}$")
_WORDISH = re.compile(r"^[A-Za-z][A-Za-z_\-]*[A-Za-z]$")
_ID = re.compile(r"^(?=.*\d)[A-Za-z0-9_\-]{3,40}$")
_ADDRESS = re.compile(r"^\d+ [A-Z][a-z]+ .*,")
_PLACE = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z]+)*, [A-Z][a-z]+(?: [A-Z][a-z]+)*, [A-Z]{2}$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_FIRST_PARAMS = {"first_name", "user_first_name", "user", "user_name", "name"}
_LAST_PARAMS = {"last_name", "user_last_name"}
_FOLDER_PARAMS = {"folder", "dir_name"}
_FILE_PARAMS = {"file_name", "file_name1", "file_name2", "source"}
_TITLE_PARAMS = {"title"}
_TEXT_PARAMS = {"content", "message", "description", "comment_content", "resolution"}
_CREDENTIAL_PARAMS = {"client_id", "client_secret", "refresh_token"}
_LABEL_PARAMS = {"card_id", "booking_id"}
_HANDLE = re.compile(r"^[a-z][a-z0-9_.]{2,30}$")
_SECRET = re.compile(r"^(?P<word>[A-Za-z]+)(?P<digits>\d+)$")


@lru_cache(maxsize=1)
def pools() -> dict[str, Any]:
    return knowledge.value_pools()


def options(method: str, param: str) -> tuple[str, ...]:
    """The documented options of a parameter (enum, '[Enum]:' or 'options: a, b, c' in its description)."""
    listed = pools()["swappable"].get(f"{method}.{param}")
    if listed:
        return tuple(listed)
    return enum_values(method, param)


def kind_of(value: str, method: str | None, param: str | None, fs_kind: str | None = None) -> str | None:
    """The kind of a string value, from where it is used and how it looks (None: not renameable)."""
    v = value.strip()
    if not v or v in (".", "..", "/", "~"):
        return None
    if fs_kind == "directory":
        return "folder"
    if fs_kind == "file":
        return "file" if _EXT.match(v) else "folder_like_file"
    if param == "password":
        return "password" if _SECRET.match(v) else None
    if param in _CREDENTIAL_PARAMS and _WORDISH.match(v):
        return "credential"  # 'my_client_id', 'rise_to_sky': kept in all eight samples of scenarios 161 and 193
    if param in _LABEL_PARAMS and _WORDISH.match(v) and not any(ch.isdigit() for ch in v):
        return "label"  # a card or booking the user keys by a word ('primary', 'latest_reservation')
    if param == "username" and _HANDLE.match(v):
        return "handle"  # a login of the user's own: 'john' and 'john1234' were kept in all 28 variants asking for it
    if param in ("city", "location", "cityA", "cityB", "travel_from", "travel_to"):
        return "place"  # the environment's own tables: swapped for another documented place, never made up
    if param in _TITLE_PARAMS:
        return "title"
    if param in _TEXT_PARAMS and " " in v and len(v) >= 15 and not re.search(r"[\n{}\[\]]", v):
        return "sentence"
    if param == "destination" and method == "set_navigation" and _ADDRESS.match(v):
        return "address"
    if param == "destination" and method == "set_navigation" and _PLACE.match(v):
        return "place_address"  # 'Crescent Hollow, Spring, TX': kept in all eight samples of scenario 71
    if _EXT.match(v) and (param in _FILE_PARAMS or param in ("destination", None) or param == "file_name"):
        return "file"
    if param in _FOLDER_PARAMS or (param == "destination" and _WORDISH.match(v)):
        return "folder"
    if _FULL_NAME.match(v):
        return "person"
    if param in _LAST_PARAMS and _NAME.match(v):
        return "last_name"
    if _NAME.match(v) and (param in _FIRST_PARAMS or param is None):
        return "first_name"
    if _TICKER.match(v):
        return "ticker"
    if _DATE.match(v):
        return "date"
    if _ID.match(v):
        return "id"
    return None


def _style(old: str, words: list[str]) -> str:
    """Join ``words`` the way ``old`` joins its parts: snake_case, kebab-case, CamelCase, Title Case."""
    if "_" in old:
        out = "_".join(words)
    elif "-" in old:
        out = "-".join(words)
    elif re.search(r"[a-z][A-Z]", old) or (old[:1].isupper() and len(words) > 1 and " " not in old):
        out = "".join(w.capitalize() for w in words)
    elif " " in old:
        out = " ".join(words)
    else:
        out = words[0] if len(words) == 1 else "_".join(words)
    if old[:1].isupper() and not out[:1].isupper():
        out = out[:1].upper() + out[1:]
    if old.isupper():
        out = out.upper()
    m = re.search(r"(\d+)$", re.sub(r"\.[A-Za-z0-9]+$", "", old))
    if m and not re.search(r"\d$", out):
        out += m.group(1)
    return out


def _document_head(stem: str, words: list[str]) -> str | None:
    """The word a file name says what kind of document it is by, when it ends in one ('finance_report' -> 'report',
    'TeamNotes2023' -> 'notes'), lower-cased; None otherwise."""
    parts = re.findall(r"[A-Z]?[a-z]+", stem)
    last = parts[-1].lower() if parts else ""
    return last if last in words else None


def _new_digits(old: str, rng: Any) -> str:
    """Same letters, new digits (the first digit of a run stays non-zero when it was)."""
    out = []
    prev_digit = False
    for ch in old:
        if ch.isdigit():
            d = str(rng.randint(1 if (not prev_digit and ch != "0") else 0, 9))
            out.append(d)
            prev_digit = True
        else:
            out.append(ch)
            prev_digit = False
    return "".join(out)


def _password(old: str, rng: Any) -> str | None:
    """A password in ``old``'s style ('securePass123' -> 'quietMaple507', 'SecurePass123' -> 'QuietMaple507')."""
    m = _SECRET.match(old)
    if not m or not pools().get("password_words"):
        return None
    word = rng.choice(pools()["password_words"])
    word = word[:1].upper() + word[1:] if m.group("word")[:1].isupper() else word
    return word + _new_digits(m.group("digits"), rng)


def tied_password(old: str, renames: dict[str, str], rng: Any) -> str | None:
    """A password made of its username and digits ('john1234' for 'john') follows the username's new name, so no old
    name is left inside it."""
    m = _SECRET.match(old)
    if not m:
        return None
    user = next((u for u in renames if u.lower() == m.group("word").lower() and _HANDLE.match(u)), None)
    return None if user is None else renames[user] + _new_digits(m.group("digits"), rng)


def first_names(pronoun: str | None = None) -> list[str]:
    """First names to draw from; with ``pronoun`` ('he' / 'she') only those that agree with it."""
    agree = pools().get("first_name_pronouns", {}).get(pronoun or "")
    return list(agree) if agree else pools()["first_names"]


def fresh(old: str, kind: str, rng: Any, taken: set[str], cls: str | None = None,
          pronoun: str | None = None) -> str | None:
    """A new value of ``kind`` in ``old``'s style, not in ``taken`` (None when none is found); a new person's
    first name agrees with ``pronoun`` when the text refers to them as 'he' or 'she'."""
    p = pools()
    taken_low = {t.lower() for t in taken}
    for _ in range(40):
        if kind == "file":
            m = _EXT.match(old)
            if not m:
                return None
            n = len(re.findall(r"[A-Z]?[a-z]+|\d+", m.group("stem"))) or 1
            # a one-word name gets a word a file is named by on its own ('usage.txt' -> 'stats.txt'): the first
            # word of a two-word stem reads oddly alone ('user.txt' for a disk usage log, read 23)
            stem_words = ([rng.choice(p["file_words"])] if n == 1 and p.get("file_words")
                          else rng.choice(p["file_stems"]).split("_")[: max(1, min(3, n))])
            head = _document_head(m.group("stem"), p.get("file_words", []))
            if head and len(stem_words) > 1 and stem_words[-1] != head:
                stem_words = [*stem_words[:-1], head]  # a report stays a report ('finance_report' -> 'sales_report'):
                # quarterly revenue in 'test_results.txt' read as a file that does not hold what its name says
            new = _style(m.group("stem"), stem_words) + "." + m.group("ext")
        elif kind in ("folder", "folder_like_file"):
            words = rng.choice(p["folders"]).split("_")
            new = _style(old.lstrip("."), words)
            new = "." * (len(old) - len(old.lstrip("."))) + new  # a hidden entry stays hidden ('.hidden_file')
        elif kind == "person":
            new = f"{rng.choice(first_names(pronoun))} {rng.choice(p['last_names'])}"
        elif kind == "first_name":
            new = rng.choice(first_names(pronoun))
        elif kind == "last_name":
            new = rng.choice(p["last_names"])
        elif kind == "title":  # the same subject, another head noun: 'Tire Pressure Issue' -> 'Tire Pressure Alert'
            words = old.split()
            heads = [i for i, w in enumerate(words) if w.strip(":").capitalize() in p["title_heads"]]
            if not heads:
                return None
            i = heads[-1]
            head = rng.choice([h for h in p["title_heads"] if h.lower() != words[i].strip(":").lower()
                               and h not in p["title_heads_read_only"]])
            new = " ".join([*words[:i], head if words[i][:1].isupper() else head.lower(), *words[i + 1:]])
        elif kind == "address":
            new = rng.choice(p["addresses"])
        elif kind == "place_address":  # a neighbourhood, a city and a state, as the seed writes it
            new = rng.choice(p["places"])
        elif kind == "street":  # another street in the same place: the text names the city ('a spot in Berkeley')
            if "," not in old:
                return None
            new = rng.choice(p["addresses"]).split(",")[0] + old[old.index(","):]
        elif kind == "sentence":
            new = rng.choice(p["sentences"].get(cls or "", p["sentences"]["default"]))
        elif kind == "ticker":  # a stock the environment lists (its market and sector lists), never a made-up one
            from rods_agents.analysis.faithfulness import known_symbols

            new = rng.choice(sorted(known_symbols(False)))
        elif kind == "password":
            new = _password(old, rng)
        elif kind == "credential":  # 'my_client_secret' -> 'cedar_lake_secret', 'rise_to_sky' -> 'swift_otter_42'
            words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+", rng.choice(p["password_words"]))]
            tail = old.split("_")[-1]
            new = "_".join([*words, tail] if tail in ("id", "secret", "token")
                           else [*words, str(rng.randint(10, 99))])
        elif kind == "label":  # another word a user keys a card or a booking by: 'primary' -> 'travel'
            several = len(re.findall(r"[A-Z]?[a-z]+", old)) > 1  # 'latest_reservation' -> 'summer_getaway'
            new = _style(old, rng.choice(p["labels"]["two_words" if several else "one_word"]).split("_"))
        elif kind == "id":
            new = _new_digits(old, rng)
        elif kind == "date":  # whole weeks later or earlier: 'next Tuesday 2026-11-10' stays a Tuesday
            import datetime as dt

            try:
                day = dt.date.fromisoformat(old)
            except ValueError:
                return None
            shifted = day + dt.timedelta(days=7 * rng.choice([-2, -1, 1, 2, 3]))
            if shifted.year != day.year:
                continue  # the year stays: other dates of the state share it (a booking on 2026-12-10, an expiry)
            new = shifted.isoformat()
        else:
            return None
        if new.lower() not in taken_low and new.lower() != old.lower():
            return new
    return None


def swap_option(value: str, method: str, param: str, rng: Any) -> str | None:
    """Another documented option of ``method.param`` (None when it has no other)."""
    opts = [o for o in options(method, param) if o != value]
    if value not in options(method, param) or not opts:
        return None
    return rng.choice(opts)


def mode_words(method: str, param: str) -> dict[str, list[str]]:
    """Words the text uses for each option of a mode parameter (wc's 'l' is 'lines')."""
    return pools().get("mode_words", {}).get(f"{method}.{param}", {})


def method_swaps() -> dict[str, Any]:
    return pools().get("methods", {})
