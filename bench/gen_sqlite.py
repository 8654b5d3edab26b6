#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Write the sqlite3 benchmark script on stdout: a bulk insert of ROWS orders over 2000
customers in one transaction, an index, then aggregate, join, LIKE and ORDER BY queries.
Deterministic (fixed seed), so every run does the same work.

    gen_sqlite.py [ROWS]   (default 5000)
"""
import random
import sys


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    rnd = random.Random(42)
    w = sys.stdout.write
    w(".bail on\n")
    w("PRAGMA journal_mode=OFF;\nPRAGMA synchronous=OFF;\n")
    w("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT, city TEXT);\n")
    w("CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, item TEXT, qty INTEGER,"
      " price REAL, note TEXT);\n")
    w("BEGIN;\n")
    cities = ["Lisbon", "Oslo", "Lima", "Osaka", "Quito", "Accra", "Perth", "Graz"]
    for c in range(2000):
        w("INSERT INTO customers VALUES(%d,'customer %d','%s');\n" % (c, c, rnd.choice(cities)))
    for i in range(rows):
        note = "".join(rnd.choice("abcdefghij ") for _ in range(rnd.randint(10, 120)))
        w("INSERT INTO orders VALUES(%d,%d,'item-%d',%d,%.2f,'%s');\n" % (
            i, rnd.randrange(2000), rnd.randrange(500), rnd.randint(1, 9),
            rnd.uniform(1, 500), note))
    w("COMMIT;\n")
    w("CREATE INDEX orders_customer ON orders(customer);\n")
    w("CREATE INDEX orders_item ON orders(item);\n")
    queries = [
        "SELECT city, count(*), sum(qty*price) FROM orders JOIN customers"
        " ON customers.id = orders.customer GROUP BY city ORDER BY 3 DESC;",
        "SELECT item, avg(price), max(qty) FROM orders GROUP BY item ORDER BY 2 DESC LIMIT 20;",
        "SELECT count(*) FROM orders WHERE note LIKE '%%abc%%';",
        "SELECT customer, group_concat(item) FROM orders WHERE qty > 7 GROUP BY customer"
        " ORDER BY length(group_concat(item)) DESC LIMIT 5;",
        "SELECT upper(note) || lower(item) FROM orders ORDER BY price DESC LIMIT 2000;",
    ]
    for _ in range(3):
        for q in queries:
            w(q + "\n")
    w("UPDATE orders SET note = note || ' updated' WHERE qty = 3;\n")
    w("DELETE FROM orders WHERE qty = 1;\n")
    w("SELECT count(*), sum(length(note)) FROM orders;\n")


if __name__ == "__main__":
    main()
