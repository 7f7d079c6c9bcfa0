"""Every message R42 shows its users, in Dutch, keyed by a stable code.

Code speaks in codes (`msg("chat.failed")`, an exception's `code`); only this catalogue holds the words. An
English message or an exception's own text never reaches the UI: `tests/unit/test_messages.py` checks that
every code used in the package is here, that every entry is Dutch, that the states show no raw exception
text, and that the Dutch texts PocketBase's hooks send (pb_hooks/) are the ones below.

Templates use `str.format` fields (`{seconds}`); `msg()` fills them and refuses unknown codes loudly in
tests (KeyError) rather than showing a code to a user. Page labels and headings stay with their pages.
"""

from __future__ import annotations

import string

CATALOGUE: dict[str, str] = {
    # -- the chat turn's guard (chat/turn.py ChatRefused, by kind; the API returns the same text with its status)
    "chat.unauthenticated": "Meld je aan om R42 te gebruiken.",
    "chat.forbidden": "Je account hoort bij geen organisatie.",
    "chat.chatbot_disabled": "R42 staat uit voor je organisatie. Je beheerder kan R42 weer aanzetten.",
    "chat.capability_denied": "Je beheerder heeft R42 voor jou uitgezet.",
    "chat.data_write_denied": "Je mag geen aanvullingen op de kennisbank doen; vraag je beheerder.",
    "chat.rate_limited": "Je stelt veel vragen vlak na elkaar. Wacht even en probeer het dan opnieuw.",
    "chat.unavailable": "R42 kan nu niet controleren wat je mag. Probeer het zo opnieuw.",
    "chat.quiz_active": "Je bent bezig met een toets. R42 is weer beschikbaar zodra je de toets afrondt of verlaat.",
    # the session of the turn no longer holds (issue 44): the user is now in another organisation or has another role
    "chat.session_changed": "Je account is gewijzigd (organisatie of rol). Stel je vraag opnieuw.",
    # -- the window
    "chat.failed": "Er ging iets mis bij het beantwoorden van je vraag. Probeer het opnieuw.",
    "chat.cut_off": "De verbinding met de server werd onderbroken; dit antwoord is niet afgemaakt. Probeer het "
                    "opnieuw.",
    "chat.thread_unreadable": "Je eerdere gesprek kon niet worden gelezen en is opnieuw begonnen.",
    "chat.history_dropped": "Oudere berichten zijn niet meegestuurd; R42 kijkt naar de laatste 12 vragen.",
    "chat.too_long": "Je bericht is {length} tekens; het maximum is {maximum}. Maak het korter en verstuur opnieuw.",
    "chat.quiz_locked": "R42 is vergrendeld zolang je toets loopt. Rond de toets af of stop ermee.",
    "chat.copied": "Antwoord gekopieerd",
    # what a screen reader hears once when an answer has ended (the log itself does not speak while it streams)
    "chat.answered": "R42 heeft geantwoord",
    "chat.stopped": "R42 is gestopt; het antwoord is onvolledig",
    "chat.rated": "Bedankt! Je beoordeling helpt de beheerders R42 te verbeteren.",
    "chat.reason_thanks": "Bedankt voor je toelichting! De beheerders zien hem bij je beoordeling.",
    "chat.rating_not_stored": "Je beoordeling is niet opgeslagen; probeer het later opnieuw.",
    "chat.rating_refused": "Je beoordeling is niet opgeslagen. {reason}",
    "chat.bad_input": "R42 kon je bericht niet lezen. Vernieuw de pagina en probeer het opnieuw.",
    # the greeting is a hello and a body (core/thread.py greeting)
    "chat.hello": "Hoi!",
    "chat.hello_name": "Hoi {name}!",
    "chat.greeting": "Ik ben R42. Stel me een vraag over de kennisbank; ik antwoord alleen vanuit die kennisbank en "
                     "laat zien waar het staat.",
    "chat.greeting_tenant": "Ik ben R42. Stel me een vraag over de kennisbank van {tenant}; ik antwoord alleen vanuit "
                            "die kennisbank en laat zien waar het staat.",
    # the answer without a model (core/chat.py offline_answer)
    "chat.offline_best_topic": "Ik vond geen zin die je vraag direct beantwoordt. Het best passende onderwerp is "
                               "{label} [ref:{ref}].",
    "chat.offline_nothing": "Daarover staat niets in de kennisbank van je organisatie.",
    # the offline answer abstains (core/relevance.py: nothing relevant found); {closest} are topic chips
    "chat.offline_not_found": "Hierover heb ik niets gevonden in de kennisbank van je organisatie. Deze onderwerpen "
                              "kwamen er het dichtst bij: {closest}",
    # -- the model service (services/adapters/llm.py LLMError)
    "llm.auth": "De AI-dienst weigert de toegang (controleer ANTHROPIC_API_KEY).",
    "llm.rate_limit": "De AI-dienst krijgt nu te veel vragen. Probeer het over een minuut opnieuw.",
    "llm.timeout": "Het antwoord bleef te lang uit. Probeer het opnieuw.",
    "llm.connection": "De verbinding met de AI-dienst viel weg. Probeer het opnieuw.",
    "llm.bad_request": "De AI-dienst kon deze vraag niet verwerken.",
    "llm.server": "De AI-dienst had een storing. Probeer het opnieuw.",
    "llm.unknown": "Er ging iets mis bij de AI-dienst. Probeer het opnieuw.",
    # -- signing in (services/store/auth.py AuthError, state/auth.py)
    "auth.missing_fields": "Vul je e-mailadres en wachtwoord in.",
    "auth.wrong_password": "E-mailadres of wachtwoord klopt niet.",
    "auth.too_many_attempts": "Te veel pogingen, probeer het over een minuut opnieuw.",
    "auth.unreachable": "De server is niet bereikbaar. Probeer het zo opnieuw.",
    "auth.no_tenant": "Dit account hoort bij geen organisatie. Neem contact op met je beheerder.",
    "auth.failed": "Aanmelden lukte niet. Probeer het opnieuw.",
    "auth.session_ended": "Je sessie is verlopen of ingetrokken. Meld je opnieuw aan.",
    # a disabled tenant (issue 46, `r42 tenant disable`): sign-in, pages, API and PocketBase (pb_hooks/r42_sessions.js)
    "auth.deactivated": "Je account is gedeactiveerd. Vraag je beheerder om het weer te activeren.",
    "auth.tenant_disabled": "Je organisatie gebruikt R42 op dit moment niet. Vraag je beheerder wanneer het weer kan.",
    "auth.no_refresh": "Een sessie wordt niet verlengd; meld je opnieuw aan.",  # pb_hooks/r42.pb.js
    # -- signing out (issue 44: "Afmelden" ends that session, "Overal afmelden" every one; state/auth.py)
    "auth.signed_out": "Deze sessie is beëindigd; meld je opnieuw aan.",  # pb_hooks/r42_sessions.js
    "auth.signed_out_everywhere": "Je bent overal afgemeld: op al je apparaten en in al je tabbladen.",
    "auth.sign_out_everywhere_failed": "Overal afmelden lukte niet: de server is niet bereikbaar. Je bent nog "
                                       "aangemeld; probeer het zo opnieuw.",
    "auth.sign_out_unconfirmed": "Je bent hier afgemeld, maar de server kon je sessie niet beëindigen; die verloopt "
                                 "vanzelf na enkele uren. Meld je later aan en kies Overal afmelden als je dit "
                                 "apparaat niet vertrouwt.",
    "auth.sign_out_failed": "Afmelden bij de server lukte niet. Probeer het opnieuw.",
    # -- signing in with the organisation's identity provider (issue 48: core/sso.py, services/adapters/oidc.py)
    "auth.enter_password": "Vul je wachtwoord in.",
    "auth.sso_only": "Je organisatie laat je aanmelden via haar eigen inlogpagina, niet met een wachtwoord.",
    "sso.domain_not_allowed": "Je e-mailadres hoort niet bij een organisatie die via deze inlogpagina mag "
                              "aanmelden.",
    "sso.email_unverified": "Je organisatie heeft je e-mailadres nog niet bevestigd. Vraag je beheerder of de "
                            "helpdesk om het te bevestigen en probeer het opnieuw.",
    "sso.no_email": "De inlogpagina van je organisatie gaf geen e-mailadres door. Vraag de helpdesk van je "
                    "organisatie om dat toe te staan.",
    "sso.deactivated": "Je account is gedeactiveerd. Vraag je beheerder om het weer te activeren.",
    "sso.other_tenant": "Dit e-mailadres hoort bij een andere organisatie in R42. Vraag je beheerder om hulp.",
    "sso.subject_mismatch": "Dit e-mailadres is al gekoppeld aan een ander account bij je organisatie. Vraag je "
                            "beheerder om hulp.",
    "sso.unreachable": "De inlogpagina van je organisatie is nu niet bereikbaar. Probeer het zo opnieuw.",
    "sso.token_refused": "De inlogpagina van je organisatie weigerde de aanmelding. Probeer het opnieuw.",
    "sso.token_invalid": "De aanmelding via je organisatie kon niet worden gecontroleerd. Probeer het opnieuw.",
    "sso.token_expired": "De aanmelding via je organisatie was verlopen. Probeer het opnieuw.",
    "sso.expired": "Het aanmelden duurde te lang of is al gebruikt. Begin opnieuw.",
    "sso.cancelled": "Het aanmelden via je organisatie is afgebroken.",
    "sso.failed": "Aanmelden via je organisatie lukte niet. Probeer het opnieuw.",
    "sso.issuer_invalid": "Vul het adres (issuer) van de inlogdienst in, bijvoorbeeld https://login.voorbeeld.nl.",
    "sso.issuer_https": "Het adres van de inlogdienst moet met https:// beginnen.",
    "sso.client_id_invalid": "Vul de client-ID in (hoogstens 255 tekens).",
    "sso.secret_invalid": "Vul het clientgeheim in (één regel).",
    "sso.group_invalid": "De naam van de beheerdersgroep is te lang (hoogstens 200 tekens).",
    "sso.domains_invalid": "{domain} is geen geldig e-maildomein. Gebruik bijvoorbeeld voorbeeld.nl.",
    "sso.domains_missing": "Vul minstens één e-maildomein in, bijvoorbeeld voorbeeld.nl.",
    "sso.domains_too_many": "Je kunt hoogstens {most} e-maildomeinen invullen.",
    "sso.domain_in_use": "Op het domein {domain} staan mensen van een andere organisatie in R42; dat domein kan "
                         "niet via jullie inlogdienst.",
    "sso.domain_unproven": "Je kunt alleen e-maildomeinen kiezen waarop je organisatie al mensen heeft in R42 "
                           "(zoals je eigen adres). Vraag de beheerder van R42 om {domain} toe te voegen.",
    "sso.secret_needed": "Vul het clientgeheim opnieuw in: het adres van de inlogdienst of de client-ID is "
                         "veranderd.",
    "sso.domain_taken": "Het domein {domain} meldt al aan via een andere organisatie.",
    # -- R42 opened from a learning environment (issue 48, LTI 1.3: core/lti.py)
    "lti.issuer_invalid": "Vul het adres (issuer) van de leeromgeving in; het begint met https://.",
    "lti.jwks_url_invalid": "Vul het adres van de sleutels (JWKS) van de leeromgeving in; het begint met https://.",
    "lti.auth_url_invalid": "Vul het aanmeldadres van de leeromgeving in; het begint met https://.",
    "lti.token_url_invalid": "Het tokenadres van de leeromgeving moet met https:// beginnen.",
    "lti.return_url_invalid": "De leeromgeving gaf geen bruikbaar adres om naar terug te keren.",
    "lti.client_id_invalid": "Vul de client-ID van de leeromgeving in (hoogstens 255 tekens).",
    "lti.deployments_invalid": "Vul één tot twintig deployment-ID's van de leeromgeving in.",
    "lti.role_invalid": "Een docent wordt in R42 beheerder of deelnemer.",
    "lti.message_type": "De leeromgeving vroeg iets wat R42 niet kan openen.",
    "lti.version": "De leeromgeving gebruikt een versie van LTI die R42 niet kent; R42 werkt met LTI 1.3.",
    "lti.unknown_deployment": "Deze koppeling van de leeromgeving is niet bij R42 aangemeld. Vraag je beheerder "
                              "om haar toe te voegen.",
    "lti.no_subject": "De leeromgeving gaf niet door wie je bent; anoniem openen kan niet.",
    "lti.invalid_launch": "De leeromgeving stuurde een onvolledige aanvraag. Probeer het opnieuw vanuit de "
                          "leeromgeving.",
    "lti.registered_elsewhere": "Deze leeromgeving (issuer en client-ID) is al aan een andere organisatie gekoppeld.",
    "lti.subject_mismatch": "Dit e-mailadres is al gekoppeld aan een ander account in de leeromgeving. Vraag je "
                            "beheerder om hulp.",
    "lti.other_tenant": "Dit e-mailadres hoort bij een andere organisatie in R42. Vraag je beheerder om hulp.",
    "lti.deactivated": "Je account is gedeactiveerd. Vraag je beheerder om het weer te activeren.",
    "lti.failed": "R42 openen vanuit de leeromgeving lukte niet. Probeer het opnieuw.",
    "lti.unreachable": "De leeromgeving is nu niet bereikbaar voor R42. Probeer het zo opnieuw.",
    "lti.token_invalid": "De aanvraag van de leeromgeving kon niet worden gecontroleerd. Open R42 opnieuw vanuit de "
                         "leeromgeving.",
    "lti.token_expired": "De aanvraag van de leeromgeving was verlopen. Open R42 opnieuw vanuit de leeromgeving.",
    "lti.expired": "Het openen duurde te lang of is al gebruikt. Open R42 opnieuw vanuit de leeromgeving.",
    "lti.deep_link_admins": "Alleen een beheerder van je organisatie in R42 kan R42 aan een cursus toevoegen.",
    "lti.deep_link_choice": "Kies een onderwerp uit de lijst, of R42 zelf.",
    "lti.registration_expired": "Deze registratie-URL is verlopen of al gebruikt. Maak in R42 een nieuwe "
                                "(Beheer › Mensen › Leeromgevingen).",
    "lti.configuration_invalid": "De leeromgeving gaf geen bruikbare configuratie door; R42 is niet gekoppeld.",
    "lti.registration_refused": "De leeromgeving weigerde de registratie van R42. Probeer het opnieuw met een nieuwe "
                                "registratie-URL.",
    "lti.registration_no_deployment": "De leeromgeving gaf geen deployment-ID door; koppel haar met de hand "
                                      "(r42 lti add).",
    "lti.added": "De leeromgeving is gekoppeld. Zet R42 nu in een cursus.",
    "lti.removed": "De leeromgeving is ontkoppeld. Haar deelnemers houden hun account.",
    "lti.unknown_platform": "Deze leeromgeving is niet bij R42 aangemeld. Vraag je beheerder om haar te koppelen.",
    "sso.saved": "Aanmelden via je organisatie is ingesteld.",
    "sso.switched_off": "Aanmelden via je organisatie staat uit; iedereen meldt zich weer aan met een wachtwoord.",
    # -- thumbs on answers (services/store/feedback.py FeedbackError, /admin/feedback)
    "feedback.bad_rating": "Een beoordeling is duim omhoog of duim omlaag.",
    "feedback.no_answer": "Er is geen antwoord om te beoordelen.",
    "feedback.too_fast": "Je hebt veel beoordelingen vlak na elkaar gegeven. Wacht een minuut en probeer het dan "
                         "opnieuw.",
    "feedback.too_large": "Deze beoordeling is te groot om op te slaan.",  # pb_hooks/r42_rules.js
    "feedback.load_failed": "De beoordelingen konden niet worden geladen. Probeer het opnieuw.",
    "feedback.reason_too_long": "Een toelichting is hoogstens 500 tekens.",
    # the privacy rule (issue 44): admins see what was asked and rated, never who, unless the learner signs a rating
    "feedback.unsigned": "Zonder naam",
    "feedback.intro": "Wat leerlingen van de antwoorden vonden (duim omhoog of omlaag), met de vraag, het antwoord en "
                      "de bronnen. De nieuwste eerst. Je ziet niet wie een beoordeling gaf, tenzij die leerling er "
                      "zelf de naam bij zette.",
    "chat.privacy_note": "Je vragen en beoordelingen worden zonder je naam bewaard om de kennisbank te verbeteren: "
                         "beheerders zien wat er gevraagd en beoordeeld wordt, niet wie dat deed.",
    "chat.sign_ratings": "Zet mijn naam erbij",
    "chat.sign_ratings_help": "Aan: beheerders zien je naam bij de duim die je hierna geeft, met die vraag en dat "
                              "antwoord. Uit: ze zien niet wie hem gaf.",
    # -- who may use R42 (/admin/chatbot; services/store/access.py AccessError)
    "access.refused": "Alleen beheerders van deze organisatie mogen de instellingen van R42 wijzigen.",
    "access.load_failed": "De instellingen konden niet worden geladen. Probeer het opnieuw.",
    "access.save_failed": "Opslaan mislukt. Probeer het opnieuw.",
    "access.unknown_capability": "Onbekende capability {bad}; kies uit {valid}.",
    "access.not_member": "Deze gebruiker hoort niet bij je organisatie.",
    "access.changed_meanwhile": "De rechten van {email} zijn intussen door iemand anders gewijzigd. Laad de pagina "
                                "opnieuw en probeer het nog eens.",
    "access.saved": "Opgeslagen: de rechten van {count} {count:gebruiker|gebruikers}. Ze gelden vanaf hun volgende "
                    "vraag.",
    "access.converted": "Omgezet: {email} houdt dezelfde rechten.",
    "access.default_saved": "Standaard bijgewerkt. Het geldt vanaf de volgende vraag van iedereen op Standaard.",
    "access.enabled": "R42 staat aan voor je organisatie.",
    "access.disabled": "R42 staat uit voor je organisatie. Niemand kan nu met R42 chatten.",
    # -- AI credit (core/costs.py QuotaExceeded, services/store/costs.py CreditError)
    "credits.no_credits": "Je organisatie heeft geen AI-tegoed meer.",
    "credits.bad_amount": "Vul een aantal credits in, bijvoorbeeld 5000.",
    "credits.out_of_range": "Vul een aantal credits in tussen -{maximum} en {maximum}.",
    "credits.below_zero": "Het tegoed kan niet lager dan 0 worden gezet.",
    "credits.change_failed": "Het tegoed kon niet worden gewijzigd. Probeer het opnieuw.",
    "credits.added": "{amount} credits toegevoegd (USD {usd}). R42 kan meteen weer antwoorden.",
    "credits.unlimited": "Onbeperkt",
    # -- the cost report (/admin/costs)
    "costs.refused": "Alleen beheerders van deze organisatie mogen de kosten en het tegoed zien en wijzigen.",
    "costs.load_failed": "De kosten konden niet worden geladen. Probeer het opnieuw.",
    "costs.bad_range": "Schrijf beide datums als dd-mm-jjjj (bijvoorbeeld 01-12-2026), de begindatum niet na de "
                       "einddatum, en hoogstens een jaar ertussen.",
    "costs.export_failed": "Exporteren mislukt. Probeer het opnieuw.",
    "costs.unknown_user": "(onbekend)",
    # -- reading the knowledge base (/, /topics/..., /graph)
    "topics.load_failed": "De onderwerpen konden niet worden geladen. Probeer het opnieuw.",
    "topics.topic_load_failed": "Dit onderwerp kon niet worden geladen. Probeer het opnieuw.",
    "graph.load_failed": "De kennisgraaf kon niet worden geladen. Probeer het opnieuw.",
    "graph.topic_load_failed": "Dit onderwerp kon niet worden geladen.",
    "graph.not_found": "Geen onderwerp gevonden voor “{query}”.",
    "graph.counts": "{topics} onderwerpen · {relations} relaties",
    "graph.ask": "Wat moet ik weten over {label}, en hoe hangt het samen met de rest?",
    # -- editing the knowledge base (/admin/topics; services/store/kb_store.py KBError)
    "kb.refused": "Alleen beheerders van deze organisatie mogen de kennisbank wijzigen.",
    "kb.topic_invalid": "Controleer de gemarkeerde velden.",
    "kb.topic_missing": "Het onderwerp '{slug}' bestaat niet (meer).",
    "kb.topic_created": "Onderwerp “{label}” aangemaakt. Voeg nu relaties toe.",
    "kb.topic_saved": "Onderwerp “{label}” opgeslagen.",
    "kb.topic_deleted": "Onderwerp “{label}” verwijderd.",
    "kb.topic_deleted_one_relation": "Onderwerp “{label}” verwijderd en 1 relatie.",
    "kb.topic_deleted_relations": "Onderwerp “{label}” verwijderd en {count} relaties.",
    "kb.document_deleted": "Onderwerp “{label}” verwijderd, met {count} hoofdstuk(ken) en het bestand {filename}.",
    "kb.pick_target": "Kies het onderwerp waarnaar de relatie wijst.",
    "kb.relation_invalid": "Deze relatie kan niet worden toegevoegd.",
    # -- documents in (core/documents.py DocumentRefused: a file that is not imported; every text names the file)
    "doc.unsupported": "{filename}: dit soort bestand kan R42 niet lezen. Gebruik PDF, Word (.docx), PowerPoint "
                       "(.pptx), Markdown (.md), HTML (.html) of tekst (.txt).",
    "doc.mismatch": "{filename}: de inhoud is geen {expected}, ook al zegt de naam dat wel.",
    "doc.empty": "{filename}: er staat geen tekst in dit bestand.",
    "doc.no_text_layer": "{filename}: deze PDF heeft geen tekstlaag (een scan?). Sla hem op met tekstherkenning "
                         "(OCR) en probeer het opnieuw.",
    "doc.corrupt": "{filename}: het bestand is beschadigd en kan niet worden gelezen.",
    "doc.encrypted": "{filename}: het bestand is beveiligd met een wachtwoord. Sla het zonder wachtwoord op en "
                     "probeer het opnieuw.",
    "doc.too_large": "{filename}: het bestand is {size} MB; het maximum is {maximum} MB.",
    "doc.too_many_pages": "{filename}: het bestand heeft {pages} pagina's of dia's; het maximum is {maximum}.",
    "doc.zip_bomb": "{filename}: het bestand pakt uit tot meer dan {maximum} MB en wordt niet gelezen.",
    "doc.timeout": "{filename}: het lezen duurde langer dan {seconds} seconden en is gestopt.",
    "doc.memory": "{filename}: het lezen had te veel geheugen nodig en is gestopt.",
    "doc.not_text": "{filename}: dit is geen leesbare tekst (binaire inhoud of een onbekende tekenset).",
    "doc.too_many_sections": "{filename}: dit document zou meer dan {maximum} onderwerpen worden. Splits het in "
                             "kleinere bestanden.",
    "doc.failed": "{filename}: het lezen is mislukt. Probeer het opnieuw.",
    "doc.too_many_files": "Kies hoogstens {maximum} bestanden tegelijk.",
    "doc.created": "{filename}: toegevoegd als {topics}.",
    "doc.updated": "{filename}: bijgewerkt; {changed} gewijzigd.",
    "doc.one_topic": "1 onderwerp",
    "doc.topics": "{count} onderwerpen",
    "doc.unchanged": "{filename}: dit bestand was al ingelezen; er is niets gewijzigd.",
    "doc.write_failed": "{filename}: opslaan is mislukt; er is niets van dit bestand opgeslagen. Probeer het opnieuw.",
    "doc.more_chapters": "… en nog {count} hoofdstukken: zie hieronder wat er onderdeel van is.",
    "doc.duplicate": "{filename}: er zit al een bestand met deze naam bij. Geef elk document een eigen naam.",
    "doc.upload_too_large": "Deze bestanden zijn samen te groot om in één keer te versturen (hoogstens 250 MB). "
                            "Voeg ze in delen toe.",
    "doc.busy": "Er worden nog documenten verwerkt; wacht tot die klaar zijn.",
    "doc.upload_failed": "De bestanden konden niet worden ontvangen. Probeer het opnieuw.",
    "doc.summary": "Klaar: {created} toegevoegd, {updated} bijgewerkt, {unchanged} ongewijzigd, {refused} geweigerd.",
    "doc.link_expired": "Deze link naar het originele bestand is verlopen. Open het onderwerp opnieuw.",
    "doc.download_failed": "Het originele bestand kon niet worden opgehaald. Probeer het opnieuw.",
    # uploads in flight (services/uploads.py, r42_app/upload_limit.py) and the parse queue (parse_sandbox.py)
    "doc.uploads_busy": "Er worden al zoveel documenten tegelijk verstuurd door jou of je organisatie als er "
                        "mogen. Wacht tot die binnen zijn en probeer het over {seconds} seconden opnieuw.",
    "doc.upload_timeout": "Er kwam {seconds} seconden niets meer binnen; het versturen is afgebroken en wat al "
                          "binnen was, is verwijderd. Probeer het opnieuw.",
    "doc.upload_unsigned": "Alleen een aangemelde beheerder kan documenten versturen. Vernieuw de pagina en meld je "
                           "opnieuw aan.",
    "doc.queued": "Andere documenten worden eerst gelezen; dit bestand is daarna aan de beurt.",
    "kb.relation_missing": "Deze relatie bestaat niet (meer).",
    "kb.relation_added": "Relatie toegevoegd.",
    "kb.relation_removed": "Relatie verwijderd.",
    "kb.import_invalid": "Het importbestand heeft {count} {count:fout|fouten}; er is niets geschreven.",
    "kb.bad_tenant": "'{slug}' is geen geldige naam voor een organisatie.",
    "kb.unknown_tenant": "Onbekende organisatie '{slug}'.",
    # -- people (issue 46: core/people.py, services/store/people.py, /admin/people, `r42 user`, /api/people)
    "people.email_required": "Vul een e-mailadres in.",
    "people.bad_email": "'{email}' is geen e-mailadres (alleen het adres zelf, zonder naam of <…>).",
    "people.bad_name": "Deze naam kan niet ({reason}).",
    "people.formula": "Een naam mag niet met '{start}' beginnen (een spreadsheet leest dat als formule).",
    "people.bad_role": "Onbekende rol '{role}': kies deelnemer of beheerder.",
    "people.password_short": "Een wachtwoord heeft minstens {minimum} tekens.",
    "people.password_long": "Een wachtwoord is hoogstens {maximum} tekens lang.",
    "people.password_odd": "Een wachtwoord mag geen onzichtbare of stuurtekens bevatten.",
    "people.password_guessable": "Dit wachtwoord is te makkelijk te raden. Kies er een dat niet veel voorkomt, "
                                 "met verschillende tekens en zonder je naam of e-mailadres.",
    "people.csv_too_big": "Het bestand is {size} MB; een lijst mensen is hoogstens {maximum} MB.",
    "people.csv_not_utf8": "Het bestand is geen tekst in UTF-8. Sla het op als 'CSV UTF-8' en probeer het opnieuw.",
    "people.csv_empty": "Het bestand bevat geen mensen.",
    "people.csv_too_many": "Het bestand heeft meer dan {maximum} regels; splits het in delen.",
    "people.csv_unreadable": "Regel {line} van het bestand is geen geldige CSV.",
    "people.csv_duplicate": "Dit adres staat al op regel {line}.",
    "people.not_found": "Deze persoon hoort niet bij je organisatie.",
    "people.other_tenant": "{email} hoort al bij een andere organisatie.",
    "people.already_member": "{email} is al lid van je organisatie.",
    "people.not_invited": "{email} heeft de uitnodiging al aangenomen.",
    "people.not_active": "{email} is niet actief; heractiveer eerst.",
    "people.still_invited": "{email} heeft de uitnodiging nog niet aangenomen; trek die in als je wilt.",
    "people.bad_state": "Kies actief of gedeactiveerd.",
    "people.link_unknown": "Deze link werkt niet (meer): hij is al gebruikt, ingetrokken of vervangen door een "
                           "nieuwere. Vraag je beheerder om een nieuwe.",
    "people.link_expired": "Deze link is verlopen. Vraag je beheerder om een nieuwe.",
    "people.passwords_differ": "De twee wachtwoorden zijn niet gelijk.",
    "people.saved_sign_in_failed": "Je wachtwoord is opgeslagen, maar aanmelden lukte niet. Meld je aan met je "
                                   "e-mailadres en je nieuwe wachtwoord.",
    "people.welcome_done": "Welkom! Je wachtwoord is opgeslagen en je bent aangemeld.",
    "people.reset_done": "Je nieuwe wachtwoord is opgeslagen en je bent aangemeld.",
    "people.reset_needs_mail": "R42 verstuurt hier geen mail. Vraag je beheerder om een link voor een nieuw "
                               "wachtwoord.",
    "people.reset_sent": "Als dit adres bij R42 hoort, krijg je binnen een paar minuten een mail met een link. "
                         "Kijk ook in je ongewenste mail.",
    "people.old_password_wrong": "Je huidige wachtwoord klopt niet.",
    "people.change_failed": "Je wachtwoord is niet gewijzigd: de server is niet bereikbaar. Probeer het zo opnieuw.",
    "people.changed": "Je wachtwoord is gewijzigd. Op je andere apparaten ben je afgemeld.",
    "people.admins_only": "Alleen beheerders van je organisatie kunnen mensen uitnodigen en wijzigen.",
    "people.load_failed": "De lijst met mensen kon niet worden geladen. Probeer het zo opnieuw.",
    "people.save_failed": "Dat is niet gelukt: de server is niet bereikbaar. Probeer het zo opnieuw.",
    "people.mail_failed": "De mail kon niet worden verstuurd ({error}). Geef deze link zelf door:",
    "people.hand_over": "R42 verstuurt geen mail. Geef deze link zelf door; hij werkt één keer:",
    "people.invited_mailed": "{email} is uitgenodigd; de uitnodiging is gemaild.",
    "people.invited": "{email} is uitgenodigd.",
    "people.role_changed": "De rol is gewijzigd.",
    "people.activated": "Weer actief: deze persoon kan zich weer aanmelden.",
    "people.deactivated": "Gedeactiveerd: alle sessies van deze persoon zijn beëindigd.",
    "people.resent": "Er is een nieuwe uitnodiging gemaakt; de vorige link werkt niet meer.",
    "people.reset_made": "Er is een link voor een nieuw wachtwoord gemaakt (2 uur geldig).",
    "people.withdrawn": "De uitnodiging is ingetrokken.",
    "people.forgotten": "De persoon is verwijderd; wat bleef, staat er zonder naam.",
    "people.imported": "{invited} mensen uitgenodigd, {unchanged} waren al lid.",
    "people.imported_mail_failed": "{failed} {failed:mail kon|mails konden} niet worden verstuurd; "
                                   "{failed:de link staat|hun links staan} hieronder.",
    "people.imported_hand_over": "R42 verstuurt geen mail: geef de links hieronder zelf door.",
    "people.not_yourself": "Je kunt jezelf hier niet verwijderen.",
    "people.forget_failed": "Verwijderen lukte niet. Probeer het opnieuw of gebruik r42 user forget.",
    # pb_hooks/r42_people.js
    "people.last_admin": "Dit is de laatste actieve beheerder van de organisatie; maak eerst iemand anders beheerder.",
    # -- organisations (issue 46: services/store/tenants.py, `r42 tenant`)
    "tenant.bad_name": "Geef de organisatie een naam van 1 tot 200 tekens, zonder onzichtbare of stuurtekens.",
    "tenant.exists": "De organisatie '{slug}' bestaat al.",
    "tenant.bad_state": "Een organisatie staat aan of uit; iets anders kan niet.",
    "kb.delta_stale": "Dit voorstel past niet meer bij de kennisbank zoals die nu is; er is niets veranderd.",
    "kb.delta_too_large": "Dit voorstel is te groot om in één keer toe te voegen.",
    "kb.write_failed": "De kennisbank kon niet worden bijgewerkt. Probeer het opnieuw.",
    # one field of a topic or relation (core/kb.py Issue): shown next to the field in the editor
    "kb.required": "Dit veld is verplicht.",
    "kb.not_text": "Vul tekst in.",
    "kb.too_long": "Te lang: {length} tekens (maximaal {maximum}).",
    "kb.id_too_long": "Te lang (maximaal {maximum} tekens).",
    "kb.not_kebab": "Gebruik kleine letters, cijfers en enkele koppeltekens, bijvoorbeeld partner-pensioen.",
    "kb.id_taken": "Het id '{slug}' bestaat al in je organisatie.",
    "kb.not_allowed": "Kies een van de toegestane waarden.",
    "kb.unknown_topic": "Onbekend onderwerp '{slug}'.",
    "kb.relation_exists": "Deze relatie bestaat al.",
    "kb.self_relation": "Een onderwerp kan geen relatie met zichzelf hebben.",
    "kb.not_object": "Dit moet een object zijn.",
    "kb.not_list": "Dit moet een lijst zijn.",
    "kb.file_not_object": "Het bestand moet een JSON-object met topics en relations zijn.",
    "kb.unknown_key": "Onbekende sleutel; een importbestand heeft alleen topics en relations.",
    "kb.duplicate": "Dit staat al in {first}.",
    # -- proposed edits of the knowledge base (chat/confirm.py DeltaNotApplied, core/delta.py)
    "delta.unusable": "R42 stelde een wijziging van de kennisbank voor die niet bruikbaar was; er is niets veranderd.",
    "delta.unreadable": "Ongeldig voorstel: de inhoud is onleesbaar.",
    "delta.new_topic": "Nieuw onderwerp: {label} ({type})",
    "delta.applied": "Toegevoegd: {topics} {topics:onderwerp|onderwerpen}, {relations} "
                     "{relations:relatie|relaties}.",
    "delta.suggested": "Voorgelegd aan de beheerders van je organisatie.",
    "delta.no_suggestions": "Voorstellen kunnen nu niet worden opgeslagen.",
    "delta.not_saved": "Het voorstel kon niet worden opgeslagen. Probeer het opnieuw.",
    # why a stored edit cannot be read (core/delta.py StoredDeltaError): shown in the review queue
    "delta.stored_list": "de inhoud is een lijst in plaats van een object",
    "delta.stored_text": "de inhoud is tekst in plaats van een object",
    "delta.stored_number": "de inhoud is een getal in plaats van een object",
    "delta.stored_bool": "de inhoud is een ja/nee-waarde in plaats van een object",
    "delta.stored_empty": "de inhoud is leeg in plaats van een object",
    "delta.stored_other": "de inhoud is {kind} in plaats van een object",
    "delta.stored_not_lists": "topics en relations moeten lijsten zijn",
    "delta.stored_too_many": "meer dan {topics} onderwerpen of {relations} relaties",
    "delta.stored_not_object": "{where} is geen object",
    "delta.stored_not_text": "{where} is geen tekst",
    "delta.stored_too_long": "{where} is langer dan {limit} tekens",
    "delta.stored_not_choice": "{where} is niet een van {allowed}",
    # -- the review queue (/admin/suggestions; services/store/suggestions.py)
    "access.question_log_on": "Vragen worden weer anoniem bewaard voor Kennishiaten.",
    "access.question_log_off": "Vragen worden niet meer bewaard. Wat al bewaard is, verdwijnt na de bewaartermijn.",
    "gaps.load_failed": "De kennishiaten konden niet worden geladen. Probeer het opnieuw.",
    "gaps.askers": "door {count} verschillende leerlingen",
    "gaps.askers_few": "door minder dan {minimum} leerlingen",
    "gaps.intro": "Wat leerlingen vroegen en de kennisbank niet kon beantwoorden, in groepen van vergelijkbare vragen "
                  "(Nederlands en Engels samen). Vragen worden zonder naam bewaard: je ziet hoe vaak er iets gevraagd "
                  "werd, niet wie het vroeg. Door hoeveel leerlingen staat er pas bij vanaf {minimum}, zodat een "
                  "groep nooit naar één persoon wijst.",
    "gaps.bad_range": "Schrijf beide datums als dd-mm-jjjj (bijvoorbeeld 01-12-2026), de begindatum niet na de "
                      "einddatum.",
    "gaps.refused": "Alleen beheerders van deze organisatie mogen kennishiaten beheren.",
    "gaps.save_failed": "Dat kon niet worden opgeslagen. Probeer het opnieuw.",
    "gaps.ignored": "Genegeerd: deze groep vragen staat niet meer in de lijst.",
    "gaps.draft_missing": "Die groep vragen bestaat niet meer (de vragen zijn verlopen of anders gegroepeerd). Je "
                          "begint met een leeg onderwerp.",
    "gaps.drafted": "R42 heeft een concept geschreven. Controleer het voor je opslaat.",
    "gaps.draft_kept": "R42's concept is klaar, maar je had de velden al aangepast: je eigen tekst is gebleven.",
    "gaps.draft_no_credits": "Geen AI-tegoed meer: het concept komt alleen uit de vragen. Vul het tegoed aan op "
                             "de pagina AI-kosten.",
    "gaps.draft_failed": "R42 kon geen concept schrijven. {reason} Het concept hieronder komt alleen uit de vragen.",
    "gaps.draft_unusable": "Het antwoord van de AI-dienst was geen bruikbaar concept.",
    "suggestions.anonymous": "een verwijderde gebruiker",
    "suggestions.refused": "Alleen beheerders van deze organisatie mogen voorstellen beoordelen.",
    "suggestions.load_failed": "De voorstellen konden niet worden geladen. Probeer het opnieuw.",
    "suggestions.approved": "Goedgekeurd: {topics} {topics:onderwerp|onderwerpen} en {relations} "
                            "{relations:relatie|relaties} toegevoegd.",
    "suggestions.rejected": "Voorstel afgewezen.",
    "suggestions.decide_failed": "Het voorstel kon niet worden verwerkt. Probeer het opnieuw.",
    "suggestions.too_many_open": "Je hebt al {count} open voorstellen; wacht tot een beheerder ze heeft beoordeeld.",
    "suggestions.not_found": "Dit voorstel bestaat niet (meer).",
    "suggestions.already_approved": "Dit voorstel is al goedgekeurd.",
    "suggestions.already_rejected": "Dit voorstel is al afgewezen.",
    "suggestions.already_decided": "Dit voorstel is al beoordeeld.",
    "suggestions.invalid": "Dit voorstel is ongeldig ({problem}) en kan alleen worden afgewezen.",
    "suggestions.adds_nothing": "het voorstel voegt niets toe",
    # -- quizzes (/testen; core/quiz.py QuizError)
    "quiz.too_small": "Deze kennisbank heeft te weinig onderwerpen en relaties voor een toets ({possible} vragen "
                      "mogelijk, minimaal {minimum} nodig).",
    "quiz.bad_scope": "Kies alle onderwerpen of één soort onderwerp.",
    "quiz.start_failed": "De toets kon niet worden gestart. Probeer het opnieuw.",
    "quiz.answer_failed": "Je antwoord kon niet worden opgeslagen. Probeer het opnieuw.",
    "quiz.ended": "De toets is elders beëindigd (in een ander tabblad, door af te melden of via de API). Antwoorden "
                  "tellen niet meer; begin opnieuw als je een score wilt.",
    "quiz.expired": "De tijd is om: een toets duurt hoogstens {minutes} minuten. Begin opnieuw als je een score wilt.",
    "quiz.reload": "Je toets is gestopt doordat de pagina opnieuw werd geladen. Antwoorden tellen niet meer; begin "
                   "opnieuw als je een score wilt.",
    "quiz.left": "Je toets is gestopt doordat je de toetspagina verliet. Antwoorden tellen niet meer; begin opnieuw "
                 "als je een score wilt.",
    "quiz.stopped": "Je hebt de toets gestopt. Je antwoorden tellen niet; begin opnieuw als je een score wilt.",
    "quiz.hold": "Lees eerst of je antwoord goed was; druk daarna nog eens om verder te gaan.",
    "quiz.verdict_right": "Goed!",
    "quiz.verdict_wrong": "Helaas, het goede antwoord is {answer}.",
    "quiz.not_answered": "(niet beantwoord)",
    "quiz.prompt_description": "Welk onderwerp past bij deze omschrijving? “{description}”",
    "quiz.prompt_part_of": "Welk onderwerp is onderdeel van {subject}?",
    "quiz.prompt_executed_by": "Welke rol voert {subject} uit?",
    "quiz.prompt_depends_on": "Waarvan is {subject} afhankelijk?",
    # -- external tools (/admin/tools)
    "tools.load_failed": "De aanroepen konden niet worden geladen. Probeer het opnieuw.",
    "tools.seconds_ago": "{seconds} s geleden",
    "tools.minutes_ago": "{minutes} min geleden",
    # -- high-risk external tools: the user's yes or no (core/mcp.py ConfirmationError, by kind)
    "confirm.failed": "Je antwoord kon niet worden verwerkt.",
    "confirm.used": "Deze bevestiging is al gebruikt.",
    "confirm.unavailable": "Je antwoord kon nu niet worden doorgegeven; probeer het zo opnieuw.",
    "confirm.unknown": "Deze bevestiging bestaat niet (meer).",
    "confirm.other_user": "Deze bevestiging is niet voor jou.",
    "confirm.expired": "Deze bevestiging is verlopen (na 5 minuten).",
    "confirm.other_call": "Deze bevestiging hoort bij een andere opdracht.",
    "confirm.no_arguments": "(geen gegevens)",
}


class _Formatter(string.Formatter):
    """str.format, and one more spec: `{n:relatie|relaties}` is the singular when n is 1, else the plural."""

    def format_field(self, value: object, format_spec: str) -> str:
        if "|" in format_spec:
            one, _, many = format_spec.partition("|")
            return one if value == 1 else many
        return super().format_field(value, format_spec)


_FORMATTER = _Formatter()


def msg(code: str, **fields: object) -> str:
    """The Dutch message for `code`, its fields filled in (a count's noun in its plural: `{n:relatie|relaties}`)."""
    template = CATALOGUE[code]
    return _FORMATTER.format(template, **fields) if fields else template


def plural(n: int, one: str, many: str) -> str:
    """"1 relatie", "2 relaties", "12.345 relaties": a count and its noun."""
    return f"{nl_number(n)} {one if n == 1 else many}"


def nl_number(n: int) -> str:
    """A whole number the Dutch way (12.345)."""
    return f"{n:,}".replace(",", ".")
