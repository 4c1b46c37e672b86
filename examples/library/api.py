"""A small lending library: an environment class that is not BFCL's, written to RODS's environment contract.

The contract (docs/environments.md): a constructor without arguments, ``_load_scenario(config, long_context)``
that loads the state from a task's ``initial_config["LibraryAPI"]``, public methods that are the tools (typed,
with a docstring whose ``Args:`` section describes each parameter), and state kept in public attributes, which
the checker compares after every turn. Errors are returned as ``{"error": ...}`` (an exception would do too: it
becomes the result ``"Error during execution: ..."``).

What makes it a useful training domain: borrowing needs a logged-in member (a precondition the model must
satisfy first), books are named by title but the tools take ids (a lookup the model must make), and a loan is
found through the member's own loan list.
"""

from __future__ import annotations

import copy
from typing import Any

DEFAULT_STATE: dict[str, Any] = {
    "members": {},
    "books": {},
    "loans": {},
    "holds": [],
    "loan_counter": 1,
    "current_user": None,
}


class LibraryAPI:
    """Members, books, loans and holds of a lending library."""

    def __init__(self) -> None:
        self.members: dict[str, dict] = {}
        self.books: dict[str, dict] = {}
        self.loans: dict[str, dict] = {}
        self.holds: list[dict] = []
        self.loan_counter: int = 1
        self.current_user: str | None = None

    def _load_scenario(self, config: dict, long_context: bool = False) -> None:
        """Load the state from a task's config; keys it does not give keep their defaults."""
        state = copy.deepcopy(DEFAULT_STATE)
        for key, default in state.items():
            setattr(self, key, copy.deepcopy(config.get(key, default)))

    # ------------------------------------------------------------------ session
    def library_login(self, username: str, password: str) -> dict:
        """Log a member in to the library; borrowing, returning, renewing and holds need it.

        Args:
            username: The member's username.
            password: The member's password.
        """
        member = self.members.get(username)
        if member is None or member.get("password") != password:
            return {"error": "Invalid username or password."}
        self.current_user = username
        return {"status": "Logged in", "member": member.get("name", username)}

    def library_logout(self) -> dict:
        """Log the current member out."""
        if self.current_user is None:
            return {"error": "No member is logged in."}
        self.current_user = None
        return {"status": "Logged out"}

    def library_login_status(self) -> dict:
        """Tell whether a member is logged in, and who."""
        return {"logged_in": self.current_user is not None, "username": self.current_user}

    # ------------------------------------------------------------------ catalog lookups
    def find_book_by_title(self, title: str) -> dict:
        """Look up a book's id by its exact title (case does not matter).

        Args:
            title: The book's title.
        """
        for book_id, book in self.books.items():
            if book["title"].lower() == title.strip().lower():
                return {"book_id": book_id}
        return {"error": f"No book titled '{title}'."}

    def search_books(self, keyword: str) -> dict:
        """Search the catalog for books whose title or author contains a keyword.

        Args:
            keyword: A word or phrase to look for (case does not matter).
        """
        needle = keyword.lower()
        found = [{"book_id": book_id, "title": book["title"], "author": book["author"],
                  "available": book["copies"] > 0}
                 for book_id, book in self.books.items()
                 if needle in book["title"].lower() or needle in book["author"].lower()]
        return {"results": found}

    def get_book_details(self, book_id: str) -> dict:
        """Show a book's title, author, shelf and available copies.

        Args:
            book_id: The book's id, e.g. 'B101'.
        """
        book = self.books.get(book_id)
        if book is None:
            return {"error": f"No book with id {book_id}."}
        return {"book_id": book_id, **book}

    # ------------------------------------------------------------------ loans
    def borrow_book(self, book_id: str, weeks: int = 2) -> dict:
        """Borrow a copy of a book for the logged-in member.

        Args:
            book_id: The book's id, e.g. 'B101'.
            weeks: Loan length in weeks, from 1 to 4.
        """
        if self.current_user is None:
            return {"error": "Log in first."}
        book = self.books.get(book_id)
        if book is None:
            return {"error": f"No book with id {book_id}."}
        if not 1 <= weeks <= 4:
            return {"error": "A loan lasts 1 to 4 weeks."}
        if book["copies"] <= 0:
            return {"error": f"No copy of '{book['title']}' is available; place a hold instead."}
        loan_id = f"L{self.loan_counter}"
        self.loan_counter += 1
        book["copies"] -= 1
        self.loans[loan_id] = {"book_id": book_id, "member": self.current_user, "weeks": weeks}
        return {"loan_id": loan_id, "title": book["title"], "weeks": weeks}

    def list_my_loans(self) -> dict:
        """List the logged-in member's loans with their ids, titles and lengths."""
        if self.current_user is None:
            return {"error": "Log in first."}
        mine = [{"loan_id": loan_id, "book_id": loan["book_id"], "title": self.books[loan["book_id"]]["title"],
                 "weeks": loan["weeks"]}
                for loan_id, loan in self.loans.items() if loan["member"] == self.current_user]
        return {"loans": mine}

    def return_book(self, loan_id: str) -> dict:
        """Return a borrowed book.

        Args:
            loan_id: The loan's id, e.g. 'L7'.
        """
        if self.current_user is None:
            return {"error": "Log in first."}
        loan = self.loans.get(loan_id)
        if loan is None or loan["member"] != self.current_user:
            return {"error": f"You have no loan {loan_id}."}
        del self.loans[loan_id]
        self.books[loan["book_id"]]["copies"] += 1
        return {"status": "Returned", "title": self.books[loan["book_id"]]["title"]}

    def renew_loan(self, loan_id: str, extra_weeks: int) -> dict:
        """Extend a loan; a loan lasts at most 6 weeks in all.

        Args:
            loan_id: The loan's id, e.g. 'L7'.
            extra_weeks: Weeks to add.
        """
        if self.current_user is None:
            return {"error": "Log in first."}
        loan = self.loans.get(loan_id)
        if loan is None or loan["member"] != self.current_user:
            return {"error": f"You have no loan {loan_id}."}
        if extra_weeks < 1 or loan["weeks"] + extra_weeks > 6:
            return {"error": "A loan lasts at most 6 weeks in all."}
        loan["weeks"] += extra_weeks
        return {"loan_id": loan_id, "weeks": loan["weeks"]}

    def place_hold(self, book_id: str) -> dict:
        """Reserve the next copy of a book that has none available.

        Args:
            book_id: The book's id, e.g. 'B101'.
        """
        if self.current_user is None:
            return {"error": "Log in first."}
        book = self.books.get(book_id)
        if book is None:
            return {"error": f"No book with id {book_id}."}
        if book["copies"] > 0:
            return {"error": f"'{book['title']}' is on the shelf; borrow it instead."}
        self.holds.append({"book_id": book_id, "member": self.current_user})
        return {"status": "Hold placed", "title": book["title"], "position": len(self.holds)}
