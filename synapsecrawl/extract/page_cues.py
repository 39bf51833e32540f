"""The vocabulary of page kinds (OMN-LABELS): which words, types and patterns are evidence of which kind.

Each table maps a schema.org type, an ``og:type``, a URL path word or a host
word to ``(kind, weight)``; each pattern is a cue ``extract.page_kind`` counts
(carts and prices, bylines, newsroom and blog phrases, tutorial and API
headings). Data only: the weighing is ``page_kind``'s.
"""

from __future__ import annotations

import re

__all__ = [
    "ARTICLE",
    "BLOG_WORDS",
    "BYLINE",
    "CART",
    "DATE_PATH",
    "DOC_HEADINGS",
    "HOST_WORDS",
    "NEWS_WORDS",
    "OG_TYPES",
    "PATH_WORDS",
    "PRICE",
    "SCHEMA_TYPES",
    "STOCK",
    "TUTORIAL_HEADINGS",
    "TUTORIAL_TITLE",
    "TUTORIAL_WORDS",
]

ARTICLE = "article"  # evidence for blog_post and news_article alike

SCHEMA_TYPES: dict[str, tuple[str, int]] = {
    "blogposting": ("blog_post", 6),
    "blog": ("blog_post", 4),
    "newsarticle": ("news_article", 6),
    "reportagenewsarticle": ("news_article", 6),
    "analysisnewsarticle": ("news_article", 6),
    "opinionnewsarticle": ("news_article", 6),
    "backgroundnewsarticle": ("news_article", 6),
    "reviewnewsarticle": ("news_article", 6),
    "liveblogposting": ("news_article", 5),
    "howto": ("tutorial", 6),
    "course": ("tutorial", 4),
    "learningresource": ("tutorial", 3),
    "techarticle": ("documentation", 3),
    "apireference": ("documentation", 6),
    "softwaresourcecode": ("documentation", 2),
    "product": ("product_page", 6),
    "productgroup": ("product_page", 6),
    "productmodel": ("product_page", 6),
    "individualproduct": ("product_page", 6),
    "article": (ARTICLE, 3),
    "aboutpage": ("other", 5),
    "contactpage": ("other", 5),
    "searchresultspage": ("other", 5),
    "profilepage": ("other", 4),
    "checkoutpage": ("other", 5),
    "collectionpage": ("other", 3),
    "faqpage": ("other", 3),
    "qapage": ("other", 4),
    "discussionforumposting": ("other", 4),
    "event": ("other", 3),
    "recipe": ("other", 3),
}
OG_TYPES: dict[str, tuple[str, int]] = {
    "article": (ARTICLE, 2),
    "blog": ("blog_post", 2),
    "product": ("product_page", 4),
    "og:product": ("product_page", 4),
    "product.item": ("product_page", 4),
    "product.group": ("product_page", 4),
    "profile": ("other", 2),
    "book": ("other", 2),
}
PATH_WORDS: dict[str, tuple[str, int]] = {
    "blog": ("blog_post", 3), "blogs": ("blog_post", 3), "post": ("blog_post", 1), "posts": ("blog_post", 2),
    "weblog": ("blog_post", 3),
    "news": ("news_article", 3), "story": ("news_article", 1), "stories": ("news_article", 1),
    "world": ("news_article", 1), "politics": ("news_article", 2), "business": ("news_article", 1),
    "docs": ("documentation", 3), "doc": ("documentation", 3), "documentation": ("documentation", 3),
    "reference": ("documentation", 3), "api": ("documentation", 2), "manual": ("documentation", 3),
    "library": ("documentation", 1), "man": ("documentation", 2), "handbook": ("documentation", 2),
    "tutorial": ("tutorial", 4), "tutorials": ("tutorial", 4), "howto": ("tutorial", 3), "how-to": ("tutorial", 3),
    "learn": ("tutorial", 2), "getting-started": ("tutorial", 2), "guides": ("tutorial", 1),
    "product": ("product_page", 3), "products": ("product_page", 3), "p": ("product_page", 1),
    "dp": ("product_page", 3), "item": ("product_page", 2), "shop": ("product_page", 2),
    "store": ("product_page", 1),
    "about": ("other", 2), "contact": ("other", 3), "login": ("other", 3), "search": ("other", 2),
    "forum": ("other", 2), "questions": ("other", 1), "careers": ("other", 2), "privacy": ("other", 2),
}  # fmt: skip
HOST_WORDS = {
    "blog": ("blog_post", 2),
    "news": ("news_article", 2),
    "docs": ("documentation", 3),
    "shop": ("product_page", 2),
    "store": ("product_page", 2),
    "learn": ("tutorial", 1),
}
DATE_PATH = re.compile(r"/(?:19|20)\d\d/(?:0?[1-9]|1[0-2])(?:/|$)")

CART = re.compile(
    r"\b(?:add to (?:cart|basket|bag)|buy now|in den warenkorb|ajouter au panier|dodaj do koszyka)\b", re.IGNORECASE
)
STOCK = re.compile(r"\b(?:in stock|out of stock|free shipping|ships in|sku)\b", re.IGNORECASE)
PRICE = re.compile(r"(?:[$€£¥]\s?\d[\d.,]*|\d[\d.,]*\s?(?:€|zł|USD|EUR|GBP|PLN))")
BYLINE = re.compile(r"^\s*(?:by|von|par|por)\s+[A-ZÀ-Ž]", re.MULTILINE)
NEWS_WORDS = re.compile(
    r"\b(?:reporting by|editing by|\(AP\)|\(Reuters\)|Associated Press|correspondent|told reporters|"
    r"said in a statement|breaking news|updated \d|last updated)\b",
    re.IGNORECASE,
)
BLOG_WORDS = re.compile(
    r"\b(?:posted (?:by|on|in)|leave a (?:comment|reply)|\d+ comments?|filed under|tagged|subscribe to my|"
    r"my (?:thoughts|journey|experience)|i (?:think|wrote|built|decided|learned))\b",
    re.IGNORECASE,
)
TUTORIAL_TITLE = re.compile(
    r"^(?:how to|how do i|tutorial|getting started|step[- ]by[- ]step|a beginner'?s guide|beginner'?s guide|"
    r"learn(?:ing)? |build(?:ing)? (?:a|an|your)|create (?:a|an|your)|introduction to|part \d)|tutorial\b",
    re.IGNORECASE,
)
TUTORIAL_WORDS = re.compile(
    r"\b(?:in this (?:tutorial|guide|lesson|walkthrough)|this tutorial|step[- ]by[- ]step|"
    r"you(?:'ll| will) (?:learn|build|create)|walk you through|follow along)\b",
    re.IGNORECASE,
)
TUTORIAL_HEADINGS = re.compile(
    r"^(?:step \d+|prerequisites|what you(?:'ll| will) (?:learn|need|build)|before you begin|next steps|"
    r"conclusion|requirements|set ?up|introduction)\b",
    re.IGNORECASE,
)
DOC_HEADINGS = re.compile(
    r"^(?:parameters|arguments|returns?|return value|raises|exceptions|attributes|methods|properties|"
    r"syntax|signature|see also|options|synopsis|description|examples?|api reference|configuration|usage|"
    r"deprecated|since version|type|default)\b",
    re.IGNORECASE,
)
