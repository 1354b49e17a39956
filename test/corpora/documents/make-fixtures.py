"""Writes the document fixtures of test/documents-parse.spec.ts. Run once with reportlab, pypdf and
python-docx installed (PyPI): python make-fixtures.py. The outputs are committed; this records how."""
from io import BytesIO

from docx import Document
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas


def pdf(path, pages, title=None):
    c = canvas.Canvas(path, pagesize=A4)
    if title:
        c.setTitle(title)
    for lines in pages:
        y = 800
        for line in lines:
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()


pdf("travel-policy.pdf", [
    ["Travel policy", "", "Book trains for trips under four hours; flights need approval.",
     "Hotels up to 150 euros a night are reimbursed with a receipt."],
    ["Expenses", "", "Submit expense claims within thirty days of returning."],
], title="Travel policy")

# The same document, password-protected.
reader = PdfReader("travel-policy.pdf")
writer = PdfWriter()
for page in reader.pages:
    writer.add_page(page)
writer.encrypt(user_password="secret", owner_password="owner")
with open("encrypted.pdf", "wb") as f:
    writer.write(f)

# A "scan": pages with drawings and no text at all.
c = canvas.Canvas("scanned.pdf", pagesize=A4)
for _ in range(2):
    c.rect(72, 400, 300, 300, fill=1)
    c.showPage()
c.save()

d = Document()
d.add_heading("Onboarding guide", level=1)
d.add_paragraph("New employees receive a laptop and a badge on their first day.")
d.add_heading("Equipment", level=2)
d.add_paragraph("Return all equipment to the IT desk when you leave the company.")
d.save("onboarding.docx")

# A DOCX cut short: a ZIP without its central directory.
with open("onboarding.docx", "rb") as f, open("corrupt.docx", "wb") as out:
    out.write(f.read()[:2000])
