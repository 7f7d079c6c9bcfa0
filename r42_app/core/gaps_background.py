"""Questions in general, per language: the background the gaps report centres question vectors on (core/gaps.py).

A sentence model's vectors share a large common part, and one per language: two English questions on different
subjects sit closer than a Dutch and an English one on the same subject. Taking each language's mean away
leaves what a question is about. The mean of a tenant's own questions is the best estimate once there are many;
these stand in while there are few (a new tenant, a test of three questions), so three rephrasings of one thing
are not centred on themselves. They are about subjects of every kind, and none is from the bench's sets.
"""

DUTCH = (
    "Wat is het verschil tussen een offerte en een factuur?",
    "Hoe maak ik een back-up van mijn bestanden?",
    "Waarom is de jaarrekening belangrijk?",
    "Wie is verantwoordelijk voor de planning van projecten?",
    "Hoe schrijf ik een goed verslag?",
    "Wat betekent de afkorting KPI?",
    "Hoe werkt de btw-aangifte?",
    "Welke stappen zijn er in het inkoopproces?",
    "Hoe lang moet ik facturen bewaren?",
    "Wat doet de ondernemingsraad?",
    "Hoe geef ik feedback aan een collega?",
    "Wat is een servicelevelovereenkomst?",
    "Hoe bereken ik de marge op een product?",
    "Welke software gebruiken we voor de boekhouding?",
    "Wat is het doel van deze module?",
    "Hoe werkt een kwaliteitscontrole op de productielijn?",
    "Wanneer moet een klacht van een klant worden afgehandeld?",
    "Wat zijn de huisregels in het gebouw?",
    "Hoe vul ik een urenstaat in?",
    "Waar vind ik de handleiding van de nieuwe machine?",
    "Wat is de rol van een teamleider?",
    "Hoe voer ik een risicoanalyse uit?",
    "Welke talen spreken onze klanten?",
    "Hoe organiseer ik een vergadering met een externe partij?",
    "Wat gebeurt er met een bestelling die te laat is?",
    "Hoe werkt het retourbeleid?",
    "Wat is het verschil tussen brutowinst en nettowinst?",
    "Hoe lees ik een balans?",
    "Welke eisen stelt de wet aan etikettering?",
    "Hoe kan ik mijn presentatievaardigheden verbeteren?",
    "Wat is een goede manier om prioriteiten te stellen?",
    "Waarom duurt de levering zo lang?",
    "Hoe controleer ik of een leverancier betrouwbaar is?",
    "Wat staat er in de gedragscode?",
    "Hoe werkt de voorraadadministratie?",
    "Wat moet ik weten over duurzaamheid in de keten?",
    "Hoe zet ik een nieuwe klant in het systeem?",
    "Wat zijn de stappen van een sollicitatieprocedure?",
    "Hoe schrijf ik een zakelijke e-mail?",
    "Wat is het verschil tussen een vaste en een variabele kostenpost?",
)

ENGLISH = (
    "What is the difference between a quote and an invoice?",
    "How do I back up my files?",
    "Why does the annual report matter?",
    "Who plans the projects?",
    "How do I write a good report?",
    "What does KPI stand for?",
    "How does the VAT return work?",
    "What are the steps of the purchasing process?",
    "How long do we keep invoices?",
    "What does the works council do?",
    "How do I give feedback to a colleague?",
    "What is a service level agreement?",
    "How do I calculate the margin on a product?",
    "Which software do we use for accounting?",
    "What is the goal of this module?",
    "How does quality control work on the production line?",
    "How do I fill in a timesheet?",
    "Where is the manual for the new machine?",
    "What is the role of a team lead?",
    "How does the returns policy work?",
)
