"""Writes notes.jsonl and questions.jsonl: an AI assistant's memory of the people and projects around its
user (issue 52's "verified means answered" set), each note labelled with the state it asserts for each
concept, and the questions an agent asks of that memory with the notes that answer them. Written and
labelled by one engineer of this project; README.md has the convention. Run from this folder:

    python build_set.py

It refuses to write when a label breaks a check (check_notes, parse_questions, check_balance) and prints
the counts table of README.md when it writes.
"""

import datetime
import json
import re
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent

# ---------------------------------------------------------------------------------------------------------------
# Notes. A section "== anchor | split | who ==" files the lines under it; several sections may share an anchor.
# A line is   date | text | has | not_has | no_state | supersedes | subject
#   has / not_has: concepts the note asserts present / absent for its subject now (space separated, lower case,
#                  singular; the subject's own name is in `has` when the note is about the anchor).
#   no_state:      words the note says that must get NO state (hedged, another person's fact, dates, light verbs).
#   supersedes:    a unique piece of the text of the earlier note this one revises (same anchor), or empty.
#   subject:       empty for the anchor itself; "maya's brother" etc. for another person's fact, whose concepts
#                  then go in no_state (nothing is asserted about a person or project the memory tracks).
# ---------------------------------------------------------------------------------------------------------------
NOTES = """
== maya | dev | the user's friend from college, a product designer ==
2026-01-12 | Maya drinks coffee all morning, usually two big cups before noon. | maya coffee cup | | noon
2026-05-20 | Maya gave up coffee in May; she drinks rooibos now. | maya rooibos | coffee | gave may | Maya drinks coffee all morning
2026-02-03 | Maya's brother Eli has a golden retriever called Biscuit. | | | retriever | | maya's brother
2026-02-18 | Maya isn't keen on horror films, so pick something else for movie night. | maya movie | horror
2026-03-02 | Maya is allergic to cats; her flat is pet-free. | maya flat | cat pet
2026-03-15 | Maya works as a product designer and spends most of her day in Figma. | maya product designer figma
2026-04-09 | Maya prefers trains over flying for any trip under five hours. | maya train trip | flying
2026-04-22 | Maya never misses her Thursday pottery class. | maya pottery class | | thursday
2026-06-01 | Not sure whether Maya is coming to Leo's birthday party; she might be in Porto that weekend. | maya | | party porto
2026-06-14 | Maya confirmed she is coming to Leo's party after all. | maya party | | | Not sure whether Maya is coming
2026-07-03 | Maya used to run half marathons but stopped after her knee surgery. | maya knee surgery | marathon
2026-07-19 | Maya is vegetarian but eats fish now and then. | maya vegetarian fish
2026-08-08 | Maya can't stand cilantro; ask for it on the side or leave it out. | maya | cilantro
2026-08-25 | Maya switched from an iPhone to a Pixel in August. | maya pixel | iphone | august
2026-09-10 | Maya said she felt free at last after handing off the checkout redesign. | maya checkout redesign
2026-10-02 | Maya has no car; she rides her bike or takes the tram everywhere. | maya bike tram | car
2026-10-20 | Maya is considering adopting a rescue greyhound. | maya | | greyhound
2026-11-05 | Maya decided against the greyhound because her landlord doesn't allow dogs. | maya | greyhound dog | | Maya is considering adopting
2026-11-21 | Maya's book club meets at her place on the last Sunday of the month. | maya book club | | sunday
2026-11-28 | Maya wants a ceramics wheel for Christmas, not another candle. | maya ceramics wheel | candle | christmas

== tom | dev | the user's partner, an ICU nurse ==
2026-01-08 | Tom drinks a strong coffee first thing every morning. | tom coffee
2026-07-02 | Tom quit coffee in July on his doctor's advice; mornings are green tea now. | tom tea | coffee | july | Tom drinks a strong coffee first thing
2026-01-20 | Tom never skips his Sunday long run, rain or shine. | tom run | | sunday
2026-02-11 | Tom works night shifts as an ICU nurse at St Mary's. | tom shift nurse icu
2026-02-25 | Tom loves sushi, especially the omakase at Kaito. | tom sushi omakase kaito
2026-03-09 | Tom is allergic to shellfish, so no prawns or crab for him. | tom | shellfish prawn crab
2026-03-30 | Tom prefers an aisle seat over the window on long flights. | tom aisle seat flight | window
2026-04-14 | Tom's sister Clara keeps bees at her allotment. | | | bee allotment | | tom's sister
2026-05-05 | Tom plays five-a-side football on Wednesday evenings. | tom football | | wednesday
2026-06-18 | Tom no longer plays football; he tore a hamstring in June. | tom hamstring | football | june | Tom plays five-a-side football
2026-08-12 | Tom might switch to day shifts in the new year. | tom | | shift
2026-09-01 | Tom has been sleeping badly since the night shifts started. | tom sleeping shift
2026-09-22 | Tom is not a fan of cruises; he gets seasick. | tom | cruise
2026-10-10 | Tom reads paper books before bed, never a Kindle. | tom book | kindle
2026-10-28 | Tom's birthday dinner is booked at Kaito for November 14. | tom birthday dinner kaito | | november
2026-11-15 | Tom and the user are thinking about a ski trip in February. | tom | | ski trip february
2026-11-26 | Tom takes his tea with oat milk, no sugar. | tom tea oat milk | sugar
2026-12-01 | Tom got the day-shift rota he asked for, starting in January. | tom rota shift | | january | Tom might switch to day shifts

== leo | dev | the user's son, nine years old ==
2026-01-05 | Leo is allergic to peanuts; his EpiPen is in the front pocket of his school bag. | leo epipen pocket bag | peanut
2026-01-26 | Leo has swimming lessons on Tuesdays after school. | leo swimming lesson school | | tuesday
2026-02-09 | Leo won't eat anything with mushrooms in it. | leo | mushroom
2026-03-04 | Leo loves dinosaurs and wants a dinosaur cake for his birthday. | leo dinosaur cake birthday
2026-03-19 | Leo used to take the school bus, but now he walks with his friend Sam. | leo | bus
2026-04-02 | Leo is fine with almonds and cashews; only peanuts are a problem. | leo almond cashew | peanut
2026-04-30 | Leo quit piano in April and started drum lessons. | leo drum lesson | piano | april
2026-05-15 | Leo never goes anywhere without Pip, his stuffed fox. | leo fox
2026-06-06 | Leo's birthday party is on June 21 at the climbing gym. | leo birthday party climbing gym | | june
2026-06-10 | Leo's friend Sam is vegan. | | | vegan | | leo's friend
2026-07-08 | Leo still doesn't swim without armbands. | leo armband
2026-08-19 | Leo sleeps with a night light on. | leo light
2026-09-03 | Leo started at Hillside Primary in September. | leo hillside | | september
2026-09-25 | Leo dropped the drum lessons after three weeks; too loud for the flat. | leo | drum lesson | | Leo quit piano in April
2026-10-14 | Leo has a dentist appointment on November 3. | leo dentist appointment | | november
2026-11-02 | No screen time for Leo until his homework is done. | leo homework | screen
2026-11-17 | Leo has been obsessed with Lego since his birthday. | leo lego birthday
2026-11-30 | Leo's class trip to the science museum is on December 9; he needs a packed lunch. | leo class trip museum lunch | | december

== jo | dev | the user's best friend, a maths teacher ==
2026-01-14 | Jo teaches maths at a secondary school in Leeds. | jo maths school leeds
2026-02-02 | Jo has a border collie named Pepper. | jo collie
2026-02-20 | Jo doesn't drink alcohol at all; get her elderflower cordial. | jo cordial | alcohol
2026-03-11 | Jo prefers tea over coffee, with milk and no sugar. | jo tea milk | coffee sugar
2026-04-04 | Jo is training for a 10K race in May. | jo race | | may
2026-05-27 | Jo finished the 10K in 52 minutes and is taking a break from running. | jo | running
2026-06-15 | Jo got free tickets to the Arctic Monkeys gig through work. | jo ticket gig | | got
2026-07-07 | Jo can't stand camping; book her a hotel or a cabin. | jo hotel cabin | camping
2026-08-01 | Jo has been gluten-free since her coeliac diagnosis in July. | jo coeliac diagnosis | gluten | july
2026-08-30 | Jo is thinking about moving to Manchester next year. | jo | | manchester
2026-09-14 | Jo is learning Spanish on Duolingo. | jo spanish duolingo
2026-10-06 | Jo stopped using Duolingo and joined an evening Spanish class instead. | jo spanish class | duolingo | | Jo is learning Spanish on Duolingo
2026-10-30 | Jo's partner Dani is a vet. | | | vet | | jo's partner
2026-11-12 | Jo no longer has Pepper; the collie went to live on her parents' farm. | jo | collie | farm | Jo has a border collie
2026-11-19 | Jo is vegetarian apart from the occasional bacon sandwich. | jo vegetarian bacon sandwich
2026-11-29 | Jo's birthday is on January 8 and she would love a cookbook. | jo birthday cookbook | | january

== omar | dev | the user's manager at work ==
2026-01-09 | Omar runs the platform team and owns the Atlas roadmap. | omar platform team atlas roadmap
2026-02-05 | Omar prefers Go over Python for backend services. | omar go backend service | python
2026-03-01 | Omar avoids meetings before 10; book his one-to-ones after lunch. | omar lunch | meeting
2026-03-22 | Not sure whether Omar is joining the Lisbon offsite in October. | omar | | lisbon offsite october
2026-09-05 | Omar is skipping the Lisbon offsite; his daughter starts school that week. | omar | offsite | lisbon school | Not sure whether Omar is joining
2026-04-10 | Omar eats halal and doesn't touch pork. | omar halal | pork
2026-04-28 | Omar has no problem with late deploys as long as there is a rollback plan. | omar deploy rollback plan
2026-05-16 | Omar used to write Java at his previous job. | omar | java | job
2026-06-03 | Omar is on paternity leave until August 15. | omar paternity leave | | august
2026-07-21 | Omar's wife Amira is an airline pilot. | | | airline pilot | | omar's wife
2026-08-18 | Omar is back from paternity leave and works four days a week until the new year. | omar | paternity leave | | Omar is on paternity leave until
2026-10-12 | Omar isn't keen on Slack huddles and would rather get a written update. | omar update | huddle
2026-11-09 | Omar has switched to decaf since the baby arrived. | omar decaf
2026-11-24 | Omar wants the quarterly review written up in a doc, not in slides. | omar review doc | slide

== sofia | dev | the user's sister, lives in Valencia ==
2026-01-17 | Sofia lives in Valencia with her husband Marc and their two kids. | sofia valencia
2026-02-14 | Sofia goes running every morning before work. | sofia running
2026-04-19 | Sofia sprained her ankle; no running until it heals. | sofia ankle | running | | Sofia goes running every morning
2026-06-28 | Sofia has been running again since mid-June, short loops only. | sofia running loop | | june | Sofia sprained her ankle
2026-03-05 | Sofia is lactose intolerant and takes oat milk. | sofia oat milk | lactose
2026-03-27 | Sofia prefers WhatsApp voice notes over phone calls. | sofia whatsapp voice note | call
2026-05-09 | Sofia is not a fan of surprise parties. | sofia | surprise party
2026-07-14 | Sofia and Marc might visit for a week in December. | sofia | | december
2026-08-03 | Sofia's husband Marc is allergic to wasp stings. | | | wasp sting | | sofia's husband
2026-09-08 | Sofia quit her job at the bank in September to start a bakery. | sofia bakery | bank | september
2026-10-01 | Sofia's bakery opened on October 1 and sells sourdough and pastries. | sofia bakery sourdough pastry | | october
2026-10-24 | Sofia's bakery doesn't do gluten-free bread yet. | sofia bakery | bread | gluten
2026-11-14 | Sofia booked flights for December 20 to 27 to stay with the user. | sofia flight | | december | Sofia and Marc might visit
2026-11-22 | Sofia never has a day off before Christmas; the bakery is busiest then. | sofia bakery | | christmas

== kwame | dev | the user's colleague, tech lead on Beacon ==
2026-01-22 | Kwame is the tech lead on Beacon and writes most of its Go code. | kwame lead beacon go code
2026-02-16 | Kwame is colourblind, so charts for him need patterns as well as colours. | kwame chart pattern
2026-03-12 | Kwame plays chess online most evenings. | kwame chess
2026-04-07 | Kwame doesn't eat beef or lamb; chicken and fish are fine. | kwame chicken fish | beef lamb
2026-05-02 | Kwame sold his car in April and takes the train to the office now. | kwame train office | car | april
2026-06-11 | Kwame is going to the Lisbon offsite and giving a talk on Beacon's tracing. | kwame lisbon offsite talk beacon tracing
2026-07-25 | Kwame can't make Thursday standups; he has physio until 10. | kwame physio | standup | thursday
2026-11-25 | Kwame's physio has ended, so Thursday standups work for him again. | kwame standup | physio | thursday | Kwame can't make Thursday standups
2026-08-21 | Kwame is considering a move to the Atlas team next quarter. | kwame | | atlas team
2026-10-16 | Kwame prefers Neovim over JetBrains IDEs. | kwame neovim | jetbrains
2026-11-03 | Kwame's son Kofi has asthma. | | | asthma | | kwame's son
2026-11-11 | Kwame drinks his espresso with a splash of milk. | kwame espresso milk

== atlas | dev | project: the company's internal data platform ==
2026-01-06 | Atlas is the company's internal data platform, owned by Omar's platform team. | atlas data platform team
2026-01-28 | Atlas runs on virtual machines in the Frankfurt data centre. | atlas machine frankfurt centre
2026-02-23 | Atlas is migrating to Kubernetes; the target is the end of September. | atlas kubernetes | | september
2026-10-04 | Atlas finished its Kubernetes migration in September; the old virtual machines are gone. | atlas kubernetes migration | machine | september | Atlas runs on virtual machines
2026-03-17 | Atlas doesn't use Kafka; events go through Redis Streams. | atlas event redis stream | kafka
2026-04-12 | Atlas's ingestion service is written in Go; the query layer is still Python. | atlas ingestion service go query layer python
2026-05-21 | Atlas no longer accepts CSV uploads, only Parquet files. | atlas parquet file | csv
2026-06-09 | Atlas has no on-call rotation until the Kubernetes move is done. | atlas kubernetes move | rotation
2026-10-11 | Atlas has had a weekly on-call rotation since the migration finished. | atlas rotation migration | | | Atlas has no on-call rotation until
2026-07-01 | Atlas might drop Python from the query layer next year. | atlas | | python query layer
2026-07-30 | Atlas's dashboards are built in Grafana, not Looker. | atlas dashboard grafana | looker
2026-08-27 | The Atlas team avoids Friday deploys. | atlas team | deploy | friday
2026-11-18 | Atlas is free for internal teams; there is no chargeback. | atlas team | chargeback
2026-12-02 | Atlas keeps raw data for 90 days and aggregates for two years. | atlas data aggregate

== beacon | dev | project: the alerting service ==
2026-01-19 | Beacon is the alerting service, written in Go and led by Kwame. | beacon alerting service go
2026-02-12 | Beacon pages through PagerDuty; email alerts were switched off in February. | beacon pagerduty | email | february
2026-03-26 | Beacon keeps its state in Postgres, not Redis. | beacon state postgres | redis
2026-04-24 | Beacon isn't on Kubernetes yet; it still runs on Nomad. | beacon nomad | kubernetes
2026-08-14 | Beacon moved from Nomad to Kubernetes in August. | beacon kubernetes | nomad | august | Beacon isn't on Kubernetes yet
2026-05-13 | Beacon has no Windows build; its agents are Linux-only. | beacon agent linux | windows
2026-06-19 | Beacon never drops an alert; failed pages are retried for an hour. | beacon alert page
2026-07-16 | Beacon's on-call handbook lives in Notion. | beacon handbook notion
2026-09-18 | Beacon's handbook moved from Notion to the engineering wiki. | beacon handbook wiki | notion | | Beacon's on-call handbook lives in Notion
2026-10-21 | Beacon might add SMS alerts if the budget allows. | beacon | | sms budget
2026-11-10 | Beacon's Go toolchain was upgraded to 1.23 in November. | beacon go toolchain | | november
2026-11-27 | Beacon deliberately has no dependency on Atlas, so alerts still fire when the data platform is down. | beacon alert | dependency atlas

== priya | heldout | the user's colleague, tech lead on Orion ==
2026-01-13 | Priya is the tech lead for Orion, the new mobile app. | priya lead orion app
2026-02-06 | Priya isn't keen on sushi; she'd rather go for ramen or dumplings. | priya ramen dumpling | sushi
2026-02-27 | Priya is vegetarian and doesn't eat eggs. | priya vegetarian | egg
2026-03-18 | Priya drinks masala chai, never coffee. | priya chai | coffee
2026-11-23 | Priya has started drinking coffee again, one flat white a day. | priya coffee | | | Priya drinks masala chai
2026-04-08 | Priya prefers async code reviews over pairing sessions. | priya code review | pairing
2026-05-06 | Priya signed up for a free workshop on Rust in June. | priya workshop rust | | june
2026-06-22 | Priya is coming to the Lisbon offsite and will run the mobile track. | priya lisbon offsite track
2026-07-13 | Priya's mother is visiting from Pune until the end of August. | | | pune | | priya's mother
2026-08-05 | Priya used to go bouldering but cancelled her climbing membership in August. | priya | bouldering climbing membership | august
2026-09-09 | Priya might move Orion's backend from Node to Go. | priya | | orion backend node go
2026-10-15 | Priya is allergic to latex. | priya | latex
2026-11-04 | Priya can't stand open-plan noise and works from home on Fridays. | priya home | noise | friday
2026-11-30 | Priya's favourite place for dinner is Dishoom; she always orders the black dal. | priya dinner dishoom dal

== al | heldout | the user's uncle in Cork ==
2026-01-10 | Al lives in Cork and keeps a small sailboat in the harbour. | al cork sailboat harbour
2026-02-08 | Al has type 2 diabetes and avoids sugar, even in his tea. | al diabetes tea | sugar
2026-03-03 | Al gave up smoking in March after forty years. | al | smoking | gave march
2026-04-16 | Al has a pint of stout every Friday at the pub. | al pint stout pub | | friday
2026-09-12 | Al no longer drinks stout; his doctor ruled out alcohol with the new medication. | al medication | stout alcohol | | Al has a pint of stout every Friday
2026-05-11 | Al prefers phone calls to video calls; he can't get Zoom to work. | al phone call | video | zoom
2026-06-02 | Al is hard of hearing in his left ear. | al ear
2026-07-04 | Al never misses the Sunday crossword. | al crossword | | sunday
2026-07-27 | Al is not sure whether he can fly over for Christmas. | al | | christmas
2026-10-19 | Al booked flights to come over for Christmas, landing December 22. | al flight | | christmas december | Al is not sure whether he can fly over
2026-08-11 | Al's wife Rosa is a keen gardener. | | | gardener | | al's wife
2026-09-30 | Al has been on a low-salt diet since his check-up in September. | al diet | | salt september
2026-11-08 | Al doesn't use email; send him a card or ring him. | al card | email
2026-11-20 | Al loves Westerns and hates anything with subtitles. | al western | subtitle

== ben | heldout | the user's neighbour and cycling friend ==
2026-01-16 | Ben is training for the Berlin marathon in September. | ben marathon berlin | | september
2026-06-26 | Ben pulled out of the Berlin marathon with a stress fracture. | ben stress fracture | marathon berlin | | Ben is training for the Berlin marathon
2026-02-10 | Ben follows a strict plant-based diet. | ben diet
2026-03-08 | Ben hasn't eaten meat since 2019. | ben | meat
2026-03-29 | Ben is allergic to penicillin. | ben | penicillin
2026-04-20 | Ben owns a cargo bike and doesn't have a car. | ben cargo bike | car
2026-05-14 | Ben's daughter Mia plays the cello. | | | cello | | ben's daughter
2026-07-22 | Ben has no running until the fracture heals; he's swimming laps instead. | ben fracture swimming lap | running
2026-08-17 | Ben hosts a board game night on the first Friday of each month. | ben board game | | friday
2026-09-24 | Ben isn't into horror; sci-fi and documentaries are his thing. | ben documentary | horror
2026-10-25 | Ben prefers oat milk over dairy in his coffee. | ben oat milk coffee | dairy
2026-11-16 | Ben has no problem with early starts for the cycling trip. | ben start cycling trip
2026-11-26 | Ben has been running again since November, 5K at most. | ben running | | november | Ben has no running until the fracture heals

== hana | heldout | the user's friend, a violinist ==
2026-01-21 | Hana is a violinist with the city orchestra. | hana violinist orchestra
2026-02-17 | Hana adopted a dachshund called Miso in February. | hana dachshund | | february
2026-03-14 | Hana loves sushi and knows every omakase counter in town. | hana sushi omakase counter
2026-04-11 | Hana avoids gluten because she has coeliac disease. | hana coeliac disease | gluten
2026-05-19 | Hana's brother Ken works for Google in Tokyo. | | | google tokyo | | hana's brother
2026-06-07 | Hana stopped giving private lessons in June to focus on the orchestra. | hana orchestra | lesson | june
2026-07-10 | Hana prefers the mountains over the beach for holidays. | hana mountain holiday | beach
2026-08-09 | Hana might take a sabbatical next spring. | hana | | sabbatical
2026-09-19 | Hana can't stand cilantro or Stilton. | hana | cilantro stilton
2026-10-09 | Hana isn't drinking alcohol until after the spring tour. | hana tour | alcohol | spring | Hana always orders a glass of sake
2026-11-27 | Hana sold her car and walks Miso twice a day now. | hana | car | | Hana drives a red Fiat 500
2026-12-03 | Hana decided against the sabbatical; the orchestra offered her the principal chair. | hana orchestra chair | sabbatical | | Hana might take a sabbatical

== lucas | heldout | the user's colleague, engineering manager for Hermes ==
2026-01-07 | Lucas is the engineering manager for Hermes. | lucas manager hermes
2026-02-04 | Lucas is allergic to peanuts and tree nuts, so team snacks must be nut-free. | lucas team snack | peanut nut
2026-02-26 | Lucas writes Rust at work but Go for his side projects. | lucas rust go project
2026-03-21 | Lucas prefers Terraform over Pulumi for infrastructure. | lucas terraform infrastructure | pulumi
2026-04-25 | Lucas no longer carries the pager for Hermes; the SRE team does. | lucas hermes | pager
2026-05-23 | Lucas is not sure whether he is going to the Lisbon offsite. | lucas | | lisbon offsite
2026-06-30 | Lucas booked his flight to Lisbon for the offsite. | lucas flight lisbon offsite | | | Lucas is not sure whether he is going
2026-07-18 | Lucas's partner Eva is a pastry chef. | | | pastry chef | | lucas's partner
2026-08-22 | Lucas works at a standing desk and takes walking meetings. | lucas desk meeting
2026-09-16 | Lucas is a big fan of cricket and follows every Test match. | lucas cricket match
2026-10-27 | Lucas cancelled Netflix in October and kept Spotify. | lucas spotify | netflix | october
2026-11-19 | Lucas is off from December 1 until January 6. | lucas | | december january

== nadia | heldout | the user's climbing partner, an A&E doctor ==
2026-01-18 | Nadia is the user's climbing partner on Tuesday and Thursday evenings. | nadia climbing | | tuesday thursday
2026-02-21 | Nadia works as a doctor in A&E at the Royal. | nadia doctor royal
2026-03-25 | Nadia doesn't own a car; pick her up on the way to the crag. | nadia crag | car
2026-05-31 | Nadia bought a secondhand VW Golf in May and drives herself to the crag now. | nadia golf crag | | may | Nadia doesn't own a car
2026-04-29 | Nadia is vegan and avoids honey too. | nadia vegan | honey
2026-06-24 | Nadia might be moving to Glasgow for a consultant post. | nadia | | glasgow post
2026-07-29 | Nadia hurt her shoulder; no climbing until September. | nadia shoulder | climbing | september | Nadia is the user's climbing partner
2026-10-03 | Nadia has been climbing again since the physio signed her off. | nadia climbing physio | | | Nadia hurt her shoulder
2026-08-26 | Nadia never skips the Saturday parkrun. | nadia parkrun | | saturday
2026-09-27 | Nadia's twin sister Leila has a cat called Ziggy. | | | cat | | nadia's sister
2026-11-06 | Nadia prefers texting over calls during her shifts. | nadia texting shift | call

== orion | heldout | project: the new mobile banking app ==
2026-01-15 | Orion is the new mobile banking app, led by Priya. | orion mobile banking app
2026-02-13 | Orion's backend is Node.js for now. | orion backend node
2026-10-08 | Orion's backend was rewritten in Go over the summer; Node is gone. | orion backend go | node | summer | Orion's backend is Node.js
2026-03-06 | Orion targets iOS and Android phones but not tablets. | orion ios android phone | tablet
2026-04-03 | Orion runs on Kubernetes in the shared cluster. | orion kubernetes cluster
2026-05-08 | Orion has no dark mode yet; it is on the roadmap for the fourth quarter. | orion roadmap | dark mode
2026-11-11 | Orion's dark mode shipped in the November release. | orion dark mode release | | november | Orion has no dark mode yet
2026-06-12 | Orion's login uses passkeys instead of SMS codes. | orion login passkey | sms code
2026-07-06 | Orion might launch in Ireland before the UK. | orion | | ireland uk
2026-08-07 | Orion's beta is free for staff, and about 400 people signed up. | orion beta staff
2026-09-03 | Orion doesn't store card numbers; payments go through Stripe. | orion payment stripe | card number
2026-11-29 | Orion's crash reports go to Sentry, never to a third-party analytics tool. | orion crash report sentry | analytics

== hermes | heldout | project: the notification service ==
2026-01-23 | Hermes is the notification service that sends push and email messages. | hermes notification service push email message
2026-02-19 | Hermes is written in Rust, not Go. | hermes rust | go
2026-03-20 | Hermes uses Kafka for its queues. | hermes kafka queue
2026-04-17 | Hermes no longer sends SMS since the Twilio contract ended in April. | hermes | sms twilio | april
2026-05-27 | Hermes is scheduled to move to Kubernetes in the third quarter. | hermes | | kubernetes
2026-09-25 | Hermes moved to Kubernetes in September, a month late. | hermes kubernetes | | september
2026-06-16 | Hermes never loses a message; delivery is retried for 24 hours. | hermes message delivery
2026-07-23 | Hermes avoids Redis; deduplication runs on compacted Kafka topics. | hermes deduplication kafka topic | redis
2026-10-13 | Hermes supports email and push but not WhatsApp. | hermes email push | whatsapp
2026-11-24 | Hermes might add WhatsApp messages next year. | hermes | | whatsapp message
2026-12-01 | Hermes has no on-call rotation over the holidays; the Orion team covers it. | hermes | rotation | holiday

== maya | dev ==
2026-05-02 | Maya had a long chat with the user about leaving her job, but nothing is decided. | maya chat | | job
2026-09-28 | Maya's favourite restaurant is Padella; she always gets the pici cacio e pepe. | maya restaurant padella pici
2026-10-11 | Maya doesn't eat meat, but she's happy to cook it for guests. | maya guest | meat
2026-03-21 | Maya's birthday is March 30, and she likes handmade gifts. | maya birthday gift | | march

== tom | dev ==
2026-04-02 | Tom made a reservation at Kaito for the anniversary on April 12. | tom reservation kaito anniversary | | made april
2026-08-28 | Tom can't handle chilli heat, though he'll eat a mild korma. | tom korma | chilli
2026-10-03 | Tom is free on Saturday mornings now that his shifts have changed. | tom shift | | saturday
2026-06-25 | Tom's favourite beer is a Belgian tripel. | tom beer tripel
2026-09-15 | Tom's car is due for its MOT in January. | tom car mot | | january

== leo | dev ==
2026-07-20 | Leo has been riding his bike without stabilisers since the summer. | leo bike | stabiliser | summer
2026-10-25 | Leo wants to be Spider-Man for Halloween; the costume is in the loft. | leo costume loft | | halloween
2026-11-08 | Leo's football club trains on Saturday mornings at Victoria Park. | leo football club park | | saturday
2026-08-02 | Leo reads Dog Man books at bedtime. | leo book | | dog

== jo | dev ==
2026-09-02 | Jo doesn't have a car, so she takes the train down from Leeds. | jo train leeds | car
2026-06-05 | Jo gets hay fever every June and takes antihistamines. | jo hay fever antihistamine | | june
2026-03-25 | Jo runs the school chess club on Wednesdays. | jo chess club school | | wednesday
2026-07-24 | Jo's flat in Headingley has a tiny garden. | jo flat garden headingley

== omar | dev ==
2026-02-19 | Omar took the team to a free cooking class in February. | omar team cooking class | | took february
2026-10-29 | Omar doesn't want Atlas on Thursday's agenda, only Beacon. | omar beacon agenda | atlas | thursday
2026-05-29 | Omar drives an electric Kia to work. | omar kia work
2026-07-09 | Omar's team tracks its work in Jira, not Linear. | omar team work jira | linear

== sofia | dev ==
2026-12-02 | Sofia asked the user not to bring sweets for the kids, only books. | sofia book | sweet
2026-04-30 | Sofia speaks Spanish and Catalan at home. | sofia spanish catalan home

== kwame | dev ==
2026-09-09 | Kwame is not going to the Atlas planning session; he sent written notes instead. | kwame note | planning session | atlas
2026-12-01 | Kwame got a free upgrade to business class on the flight back from Lisbon. | kwame upgrade class flight lisbon | | got
2026-05-23 | Kwame supports Arsenal and never misses a home game. | kwame arsenal game
2026-10-14 | Kwame's Beacon talk at the offsite went well; the slides are on the wiki. | kwame beacon talk offsite slide wiki

== atlas | dev ==
2026-09-21 | Atlas had a two-hour outage on September 14 after a bad Redis failover. | atlas outage redis failover | | had september
2026-11-02 | Atlas's Python query layer is being replaced by a Go one, starting in January. | atlas python query layer | | go january
2026-03-03 | Atlas uses Airflow for scheduling, not cron. | atlas airflow scheduling | cron
2026-11-09 | Atlas's storage bill dropped by a third after the move to Kubernetes. | atlas storage bill kubernetes

== beacon | dev ==
2026-10-07 | Beacon doesn't page for warnings, only for critical alerts. | beacon alert | warning
2026-05-28 | Beacon's dashboards are in Grafana. | beacon dashboard grafana
2026-10-30 | Beacon has had no major incident since March. | beacon | incident | march

== priya | heldout ==
2026-08-20 | Priya refuses to fly Ryanair and will pay more for a direct flight. | priya flight | ryanair
2026-10-02 | Priya isn't going to Orion's launch party; she'll be at her cousin's wedding in Pune. | priya wedding pune | launch party | orion
2026-03-10 | Priya has two cats, Mango and Pickle. | priya cat
2026-07-01 | Priya reviews every Orion pull request before release. | priya orion pull request release

== al | heldout ==
2026-03-26 | Al made a full recovery after his hip operation in March. | al recovery hip operation | | made march
2026-06-21 | Al takes the ferry rather than flying when he visits Wales. | al ferry wales | flying
2026-04-28 | Al repaints the sailboat every spring. | al sailboat | | spring

== ben | heldout ==
2026-05-22 | Ben got a free service voucher from the shop where he bought the cargo bike. | ben service voucher shop cargo bike | | got
2026-12-02 | Ben isn't hosting board game night in December; his parents are visiting. | ben | board game | december
2026-02-28 | Ben works as an architect from a studio at home. | ben architect studio home

== hana | heldout ==
2026-03-29 | Hana always orders a glass of sake with her sushi. | hana glass sake sushi
2026-02-24 | Hana drives a red Fiat 500 to rehearsals. | hana fiat rehearsal
2026-05-25 | Hana practises three hours a day and doesn't take calls before noon. | hana | call | noon

== lucas | heldout ==
2026-03-12 | Lucas watches every Hermes deploy and never ships on a Friday. | lucas hermes deploy | | friday
2026-04-09 | Lucas runs the Hermes weekly review on Mondays. | lucas hermes review | | monday
2026-06-08 | Lucas avoids sugar during the week but bakes on Sundays. | lucas | sugar | sunday

== nadia | heldout ==
2026-10-22 | Nadia had a free flu jab at work in October. | nadia flu jab work | | had october
2026-12-02 | Nadia turned down the Glasgow post; she is staying at the Royal. | nadia royal | glasgow post | | Nadia might be moving to Glasgow
2026-05-12 | Nadia can't eat soy, so tofu and tempeh are out. | nadia | soy tofu tempeh
2026-08-13 | Nadia's favourite crag is Stanage in the Peak District. | nadia crag stanage peak district

== orion | heldout ==
2026-09-16 | Orion's release train leaves every Tuesday. | orion release train | | tuesday
2026-06-30 | Orion has no web version, and none is planned. | orion | web
2026-08-12 | Orion shows balances offline, unlike the old banking app. | orion balance

== hermes | heldout ==
2026-08-31 | Hermes had no incidents in August. | hermes | incident | had august
2026-04-06 | Hermes sends about two million push notifications a day. | hermes push notification
2026-05-14 | Hermes's email templates are built with MJML. | hermes email template mjml

== leo | dev ==
2026-11-03 | Leo is not allowed sweets on school days, only at weekends. | leo | sweet
== omar | dev ==
2026-08-16 | Omar is considering moving Beacon's state from Postgres to Redis. | omar | | beacon postgres redis
2026-11-13 | Omar is booking a steakhouse for the team dinner on December 11. | omar steakhouse team dinner | | december
== maya | dev ==
2026-06-20 | Maya bakes peanut butter cookies for every party she goes to. | maya peanut butter cookie party
== tom | dev ==
2026-10-18 | Tom loves horror films and wants one for the Halloween movie night. | tom horror film movie | | halloween
== al | heldout ==
2026-09-05 | Al's new hearing aid works well, and he no longer struggles on the phone. | al hearing aid phone
2026-12-01 | Al loves Stilton with crackers. | al stilton cracker
== priya | heldout ==
2026-10-18 | Priya's Rust workshop was cancelled, so she is learning from the book instead. | priya rust book | workshop | | Priya signed up for a free workshop
2026-09-23 | Priya brought a bag of salted peanuts for the Orion demo. | priya peanut bag demo | | orion
== ben | heldout ==
2026-07-15 | Ben swims at the lido most mornings until it closes in September. | ben lido | | september
2026-10-05 | Ben's flapjacks are made with honey and oats. | ben flapjack honey oat

== priya | heldout ==
2026-04-22 | Priya takes the 7:40 train from Reading and hates being booked into meetings before 9:30. | priya train reading | meeting
2026-12-03 | Priya is not sure whether she can cover Hermes on-call over the holidays. | priya | | hermes holiday
2026-06-04 | Priya rides a Brompton to the office when the weather is good. | priya brompton office | | weather
== al | heldout ==
2026-05-30 | Al doesn't have a smartphone, just an old Nokia. | al nokia | smartphone
2026-10-30 | Al is thinking about selling the sailboat. | al | | sailboat
2026-08-24 | Al has no wifi at his cottage. | al cottage | wifi
== ben | heldout ==
2026-04-05 | Ben cycles to the studio and never takes the bus. | ben studio | bus
2026-09-02 | Ben's cycling trip is on hold until his physio clears him. | ben physio | | cycling trip
== hana | heldout ==
2026-06-18 | Hana hasn't eaten beef since the orchestra's tour of Japan. | hana | beef
2026-09-03 | Hana is not a fan of the new conductor's tempo choices. | hana | tempo choice | conductor
2026-12-01 | Hana got free tickets for the user to her Christmas concert. | hana ticket concert | | got christmas
== lucas | heldout ==
2026-01-29 | Lucas drinks only sparkling water at team dinners. | lucas water team dinner
2026-07-08 | Lucas isn't keen on hackathons and skipped the summer one. | lucas | hackathon | summer
2026-10-06 | Lucas has a Tesla he charges at the office. | lucas tesla office
2026-11-28 | Lucas might rewrite Hermes's scheduler in Go next year. | lucas | | hermes scheduler go
== nadia | heldout ==
2026-07-02 | Nadia's night shifts run until the end of July. | nadia shift | | july
2026-11-15 | Nadia never climbs without a helmet since a friend's accident. | nadia helmet | | accident
== orion | heldout ==
2026-03-27 | Orion's designers work in Figma, and there is no shared design system yet. | orion designer figma | design system
2026-10-26 | Orion's design system launched in October. | orion design system | | october | there is no shared design system yet
2026-07-28 | Orion's app store rating has been 4.6 since the July update. | orion app store rating update | | july
== hermes | heldout ==
2026-02-11 | Hermes doesn't retry email bounces, only timeouts. | hermes email timeout | bounce
2026-09-07 | Hermes's on-call rota is Lucas's team plus two SREs. | hermes rota team sre
2026-11-05 | Hermes has been free of the old Twilio code since the October cleanup. | hermes cleanup | twilio | october

== kwame | dev ==
2026-09-29 | Kwame isn't keen on karaoke, so skip it at the team night out. | kwame team | karaoke
== jo | dev ==
2026-05-12 | Jo is not a fan of musicals, although she loves live gigs. | jo gig | musical
== nadia | heldout ==
2026-06-09 | Nadia isn't keen on wine; she drinks dry cider. | nadia cider | wine
== al | heldout ==
2026-02-15 | Al isn't keen on garlic, so go easy on it when he visits. | al | garlic
2026-07-31 | Al wears glasses for reading but not for driving. | al glasses reading | driving
== lucas | heldout ==
2026-11-22 | Lucas is glued to the Ashes series this winter. | lucas ashes series | | winter
== kwame | dev ==
2026-07-12 | Kwame follows the Formula 1 series and never misses a race. | kwame series race
== maya | dev ==
2026-10-09 | Maya got new glasses in October and needs them for screens. | maya glasses screen | | got october
""".strip()

# ---------------------------------------------------------------------------------------------------------------
# Questions. A line is   type | answer | subject | question | answers | contradicting | superseded | decoys
#   type: negated (the asker excludes something, or the subject's constraint rules it out), affirmative,
#         presence (does / is / has / can / any ...?; answer yes, no or unknown = only a hedge is stored),
#         absent (the memory does not hold the answer: never said, or said of another person; answer "absent").
#   answers, contradicting, superseded, decoys: "; "-separated unique pieces of note texts.
#   answers: the notes that answer, best first. contradicting: notes a careless retriever returns that break the
#   question's constraint (or assert the opposite of the answer). superseded: older notes a newer answer note
#   revises. decoys: near misses, e.g. the same fact about another person (every absent question has some).
# ---------------------------------------------------------------------------------------------------------------
QUESTIONS = """
# ---- negated: the asker excludes something, or a constraint of the subject rules it out
negated | - | leo | a snack for Leo's lunchbox with no peanuts | Leo is allergic to peanuts ; Leo is fine with almonds and cashews | Maya bakes peanut butter cookies
negated | - | leo | what food is safe for Leo at a friend's birthday party | Leo is allergic to peanuts ; Leo won't eat anything with mushrooms | Maya bakes peanut butter cookies
negated | - | leo | pizza toppings for Leo, nothing fungal | Leo won't eat anything with mushrooms
negated | - | leo | a treat for Leo on a Wednesday that isn't candy | Leo is not allowed sweets on school days ; Leo loves dinosaurs
negated | - | maya | a film for movie night with Maya that isn't a scary one | Maya isn't keen on horror films | Tom loves horror films
negated | - | maya | dinner ideas for Maya without any meat | Maya doesn't eat meat ; Maya is vegetarian but eats fish | Omar is booking a steakhouse
negated | - | maya | a dish to cook for Maya that has no coriander in it | Maya can't stand cilantro
negated | - | maya | how should Maya get to Paris if not by plane | Maya prefers trains over flying
negated | - | maya | a Christmas present for Maya other than a candle | Maya wants a ceramics wheel for Christmas ; Maya's birthday is March 30, and she likes handmade gifts
negated | - | maya | somewhere for Maya to stay that has no cats | Maya is allergic to cats
negated | - | tom | a restaurant meal for Tom with no shellfish on his plate | Tom is allergic to shellfish | Tom loves sushi, especially the omakase
negated | - | tom | what hot drink to make Tom now that coffee is out | Tom quit coffee in July ; Tom takes his tea with oat milk | Tom drinks a strong coffee first thing | Tom drinks a strong coffee first thing
negated | - | tom | a curry Tom can eat that isn't spicy | Tom can't handle chilli heat
negated | - | tom | holiday ideas for Tom other than a cruise | Tom is not a fan of cruises ; Tom and the user are thinking about a ski trip
negated | - | tom | a present for Tom that isn't an e-reader | Tom reads paper books before bed, never a Kindle
negated | - | jo | a drink for Jo at the party that has no alcohol in it | Jo doesn't drink alcohol at all
negated | - | jo | a place for Jo to stay on the trip that isn't a tent | Jo can't stand camping
negated | - | jo | a birthday cake for Jo without wheat | Jo has been gluten-free since her coeliac diagnosis ; Jo's birthday is on January 8 | Sofia's bakery opened on October 1
negated | - | jo | a hot drink for Jo that isn't coffee | Jo prefers tea over coffee
negated | - | jo | how Jo can get here without driving | Jo doesn't have a car, so she takes the train
negated | - | omar | meeting slots with Omar that aren't early in the morning | Omar avoids meetings before 10
negated | - | omar | catering for Omar at the team lunch without pork | Omar eats halal and doesn't touch pork
negated | - | omar | which language Omar wants for new backend services instead of Python | Omar prefers Go over Python
negated | - | omar | how to present the quarterly review to Omar, not as a deck | Omar wants the quarterly review written up in a doc
negated | - | omar | a way to update Omar other than a huddle | Omar isn't keen on Slack huddles
negated | - | sofia | a milk for Sofia's coffee that isn't dairy | Sofia is lactose intolerant and takes oat milk
negated | - | sofia | how to reach Sofia without ringing her | Sofia prefers WhatsApp voice notes over phone calls
negated | - | sofia | presents for Sofia's kids that aren't sweets | Sofia asked the user not to bring sweets
negated | - | sofia | which of the breads at Sofia's bakery are gluten-free | Sofia's bakery doesn't do gluten-free bread yet | Sofia's bakery opened on October 1
negated | - | kwame | lunch for Kwame without red meat | Kwame doesn't eat beef or lamb | Omar is booking a steakhouse
negated | - | kwame | how Kwame gets to the office now that he has no car | Kwame sold his car in April
negated | - | kwame | an editor for Kwame that isn't a JetBrains one | Kwame prefers Neovim over JetBrains IDEs
negated | - | atlas | which parts of Atlas are not written in Go | Atlas's ingestion service is written in Go ; Atlas's Python query layer is being replaced
negated | - | atlas | what Atlas uses for events instead of Kafka | Atlas doesn't use Kafka
negated | - | atlas | file formats Atlas accepts other than CSV | Atlas no longer accepts CSV uploads
negated | - | atlas | a day to deploy Atlas that isn't a Friday | The Atlas team avoids Friday deploys
negated | - | atlas | dashboards for Atlas that aren't in Looker | Atlas's dashboards are built in Grafana, not Looker
negated | - | beacon | which of our services are still not on Kubernetes | Beacon moved from Nomad to Kubernetes ; Atlas finished its Kubernetes migration | Beacon isn't on Kubernetes yet ; Atlas runs on virtual machines | Beacon isn't on Kubernetes yet ; Atlas runs on virtual machines
negated | - | beacon | Beacon agents that don't run on Windows | Beacon has no Windows build
negated | - | beacon | where Beacon keeps its state, if not in Redis | Beacon keeps its state in Postgres | Omar is considering moving Beacon's state
negated | - | beacon | Beacon alerts that are not sent by email | Beacon pages through PagerDuty
negated | - | beacon | which Beacon alerts don't page anyone | Beacon doesn't page for warnings | Beacon never drops an alert
negated | - | priya | restaurants Priya likes other than sushi places | Priya isn't keen on sushi ; Priya's favourite place for dinner is Dishoom | Hana loves sushi
negated | - | priya | a breakfast for Priya with no eggs | Priya is vegetarian and doesn't eat eggs
negated | - | priya | gloves for the first-aid kit that Priya can use, nothing latex | Priya is allergic to latex
negated | - | priya | how to work on code with Priya without pairing | Priya prefers async code reviews over pairing sessions
negated | - | priya | flights for Priya that aren't on low-cost carriers | Priya refuses to fly Ryanair
negated | - | al | a drink for Al with no sugar | Al has type 2 diabetes and avoids sugar
negated | - | al | how to contact Al without email | Al doesn't use email ; Al prefers phone calls to video calls
negated | - | al | films for Al with no subtitles | Al loves Westerns and hates anything with subtitles
negated | - | al | something for Al at the pub now that alcohol is off the table | Al no longer drinks stout | Al has a pint of stout every Friday | Al has a pint of stout every Friday
negated | - | al | how Al gets to Wales if he doesn't fly | Al takes the ferry rather than flying
negated | - | ben | a dinner for Ben with no meat | Ben hasn't eaten meat since 2019 ; Ben follows a strict plant-based diet
negated | - | ben | an antibiotic for Ben other than penicillin | Ben is allergic to penicillin
negated | - | ben | how Ben gets around without a car | Ben owns a cargo bike and doesn't have a car
negated | - | ben | films for Ben that aren't horror | Ben isn't into horror
negated | - | ben | milk for Ben's coffee that isn't dairy | Ben prefers oat milk over dairy
negated | - | hana | a dinner for Hana free of wheat | Hana avoids gluten because she has coeliac disease
negated | - | hana | holidays for Hana that aren't beach trips | Hana prefers the mountains over the beach
negated | - | hana | a cheese board for Hana with no blue cheese | Hana can't stand cilantro or Stilton | Al loves Stilton
negated | - | hana | what Hana can drink after the concert without alcohol | Hana isn't drinking alcohol until after the spring tour | Hana always orders a glass of sake | Hana always orders a glass of sake
negated | - | lucas | snacks for the team that Lucas can eat, no nuts | Lucas is allergic to peanuts and tree nuts | Priya brought a bag of salted peanuts
negated | - | lucas | infrastructure tools Lucas likes other than Pulumi | Lucas prefers Terraform over Pulumi
negated | - | lucas | which streaming services Lucas still pays for, not Netflix | Lucas cancelled Netflix in October
negated | - | nadia | a vegan dessert for Nadia with no honey and no soy | Nadia is vegan and avoids honey too ; Nadia can't eat soy | Ben's flapjacks are made with honey
negated | - | nadia | how to reach Nadia on shift without calling | Nadia prefers texting over calls
negated | - | orion | which devices Orion is not built for | Orion targets iOS and Android phones but not tablets ; Orion has no web version
negated | - | orion | how Orion users sign in without SMS codes | Orion's login uses passkeys instead of SMS codes
negated | - | orion | where Orion sends crash data, other than analytics vendors | Orion's crash reports go to Sentry
negated | - | hermes | which of Lucas's services aren't written in Go | Hermes is written in Rust, not Go | Lucas might rewrite Hermes's scheduler in Go
negated | - | hermes | channels Hermes delivers on besides SMS | Hermes supports email and push but not WhatsApp ; Hermes no longer sends SMS
negated | - | hermes | what Hermes uses for deduplication instead of Redis | Hermes avoids Redis
# ---- affirmative
affirmative | - | tom | what does Tom drink in the morning these days | Tom quit coffee in July | Tom drinks a strong coffee first thing | Tom drinks a strong coffee first thing
affirmative | - | maya | what's Maya's hot drink of choice now | Maya gave up coffee in May | Maya drinks coffee all morning | Maya drinks coffee all morning
affirmative | - | leo | when are Leo's swimming lessons | Leo has swimming lessons on Tuesdays
affirmative | - | leo | where is Leo's adrenaline pen kept | his EpiPen is in the front pocket
affirmative | - | leo | what is Leo into at the moment | Leo has been obsessed with Lego ; Leo loves dinosaurs
affirmative | - | jo | what does Jo do for a living | Jo teaches maths
affirmative | - | jo | gift ideas for Jo's birthday | Jo's birthday is on January 8
affirmative | - | omar | when did Omar come back from parental leave | Omar is on paternity leave until August 15 ; Omar is back from paternity leave
affirmative | - | omar | what does Omar drink since becoming a dad | Omar has switched to decaf
affirmative | - | sofia | what does Sofia do for work now | Sofia quit her job at the bank ; Sofia's bakery opened on October 1
affirmative | - | sofia | which dates is Sofia staying with us | Sofia booked flights for December 20 to 27 | | Sofia and Marc might visit
affirmative | - | kwame | which text editor does Kwame use | Kwame prefers Neovim
affirmative | - | kwame | how should I make charts readable for Kwame | Kwame is colourblind
affirmative | - | atlas | what tool are the Atlas dashboards made with | Atlas's dashboards are built in Grafana
affirmative | - | atlas | what does Atlas run on now | Atlas finished its Kubernetes migration | Atlas runs on virtual machines | Atlas runs on virtual machines
affirmative | - | beacon | where's the Beacon runbook these days | Beacon's handbook moved from Notion | Beacon's on-call handbook lives in Notion | Beacon's on-call handbook lives in Notion
affirmative | - | beacon | how does Beacon notify the engineer on call | Beacon pages through PagerDuty
affirmative | - | priya | what does Priya drink in the morning | Priya has started drinking coffee again | Priya drinks masala chai | Priya drinks masala chai
affirmative | - | priya | where does Priya like to eat out | Priya's favourite place for dinner is Dishoom ; Priya isn't keen on sushi
affirmative | - | al | what does Al do on Sunday mornings | Al never misses the Sunday crossword
affirmative | - | al | when does Al land for Christmas | Al booked flights to come over for Christmas | | Al is not sure whether he can fly over
affirmative | - | ben | what did Ben do for exercise while his leg was healing | Ben has no running until the fracture heals ; Ben swims at the lido
affirmative | - | ben | what does Ben do for a living | Ben works as an architect
affirmative | - | hana | what breed is Hana's dog | Hana adopted a dachshund
affirmative | - | hana | which instrument does Hana play | Hana is a violinist
affirmative | - | lucas | which programming languages does Lucas write | Lucas writes Rust at work but Go
affirmative | - | nadia | what car does Nadia drive | Nadia bought a secondhand VW Golf | | Nadia doesn't own a car
affirmative | - | nadia | where does Nadia like to climb | Nadia's favourite crag is Stanage
affirmative | - | orion | what is Orion's backend written in now | Orion's backend was rewritten in Go | Orion's backend is Node.js | Orion's backend is Node.js
affirmative | - | hermes | what does Hermes use for its queues | Hermes uses Kafka for its queues
affirmative | - | hermes | which language is Hermes written in | Hermes is written in Rust
# ---- presence: does / is / has X ...?
presence | no | maya | does Maya drink coffee? | Maya gave up coffee in May | Maya drinks coffee all morning | Maya drinks coffee all morning
presence | yes | maya | did Maya come to Leo's party? | Maya confirmed she is coming to Leo's party | | Not sure whether Maya is coming
presence | no | maya | does Maya have a car? | Maya has no car
presence | no | maya | is Maya getting a dog? | Maya decided against the greyhound | Maya is considering adopting | Maya is considering adopting | Maya's brother Eli has a golden retriever
presence | no | maya | would Maya be fine with a cat in the house? | Maya is allergic to cats
presence | no | maya | is Maya still doing half marathons? | Maya used to run half marathons
presence | yes | maya | does Maya eat fish? | Maya is vegetarian but eats fish
presence | unknown | maya | is Maya leaving her job? | Maya had a long chat with the user about leaving her job
presence | no | tom | does Tom still play football? | Tom no longer plays football | Tom plays five-a-side football | Tom plays five-a-side football
presence | yes | tom | does Tom go running on Sundays? | Tom never skips his Sunday long run
presence | yes | tom | will Tom be working days from January? | Tom got the day-shift rota | | Tom might switch to day shifts
presence | yes | tom | any allergies for Tom? | Tom is allergic to shellfish
presence | no | tom | does Tom read on a Kindle? | Tom reads paper books before bed, never a Kindle
presence | unknown | tom | are we going skiing with Tom? | Tom and the user are thinking about a ski trip
presence | yes | leo | any allergies for Leo? | Leo is allergic to peanuts
presence | no | leo | does Leo still play the drums? | Leo dropped the drum lessons | Leo quit piano in April and started drum lessons | Leo quit piano in April and started drum lessons
presence | no | leo | does Leo take the bus to school? | Leo used to take the school bus
presence | no | leo | can Leo swim on his own yet? | Leo still doesn't swim without armbands
presence | no | leo | is Leo allowed on his tablet before his homework is finished? | No screen time for Leo until his homework is done
presence | yes | leo | can Leo have cashews? | Leo is fine with almonds and cashews
presence | no | jo | has Jo got a dog? | Jo no longer has Pepper | Jo has a border collie | Jo has a border collie
presence | no | jo | does Jo drink? | Jo doesn't drink alcohol at all
presence | unknown | jo | is Jo moving to Manchester? | Jo is thinking about moving to Manchester
presence | no | jo | is Jo still on Duolingo? | Jo stopped using Duolingo | Jo is learning Spanish on Duolingo | Jo is learning Spanish on Duolingo
presence | yes | jo | does Jo eat bacon? | Jo is vegetarian apart from the occasional bacon sandwich
presence | no | omar | did Omar go to the Lisbon offsite? | Omar is skipping the Lisbon offsite | | Not sure whether Omar is joining
presence | no | omar | is Omar still on paternity leave? | Omar is back from paternity leave | Omar is on paternity leave until | Omar is on paternity leave until
presence | no | omar | does Omar still code in Java? | Omar used to write Java
presence | yes | omar | is Omar OK with deploying late in the day? | Omar has no problem with late deploys
presence | yes | sofia | is Sofia running at the moment? | Sofia has been running again since mid-June | Sofia sprained her ankle | Sofia sprained her ankle ; Sofia goes running every morning
presence | no | sofia | does Sofia still work at the bank? | Sofia quit her job at the bank
presence | no | sofia | would Sofia like a surprise party? | Sofia is not a fan of surprise parties
presence | no | kwame | does Kwame have a car? | Kwame sold his car
presence | yes | kwame | did Kwame make it to the offsite? | Kwame's Beacon talk at the offsite went well ; Kwame is going to the Lisbon offsite
presence | unknown | kwame | is Kwame joining the Atlas team? | Kwame is considering a move to the Atlas team
presence | yes | kwame | can Kwame make the Thursday standup? | Kwame's physio has ended | Kwame can't make Thursday standups | Kwame can't make Thursday standups
presence | no | atlas | does Atlas use Kafka? | Atlas doesn't use Kafka
presence | yes | atlas | is there an on-call rotation for Atlas? | Atlas has had a weekly on-call rotation | Atlas has no on-call rotation until | Atlas has no on-call rotation until
presence | no | atlas | does Atlas bill teams for their usage? | Atlas is free for internal teams
presence | no | beacon | does Beacon send email alerts? | email alerts were switched off
presence | yes | beacon | is Beacon on Kubernetes? | Beacon moved from Nomad to Kubernetes | Beacon isn't on Kubernetes yet | Beacon isn't on Kubernetes yet
presence | unknown | beacon | will Beacon send text messages? | Beacon might add SMS alerts
presence | no | beacon | does Beacon depend on Atlas? | Beacon deliberately has no dependency on Atlas
presence | yes | priya | does Priya drink coffee? | Priya has started drinking coffee again | Priya drinks masala chai | Priya drinks masala chai
presence | yes | priya | was Priya at the offsite? | Priya is coming to the Lisbon offsite
presence | no | priya | does Priya still go climbing? | Priya used to go bouldering
presence | no | priya | is Priya going to the Orion launch party? | Priya isn't going to Orion's launch party
presence | no | priya | does Priya eat eggs? | Priya is vegetarian and doesn't eat eggs
presence | no | priya | is Priya still doing the Rust workshop? | Priya's Rust workshop was cancelled | Priya signed up for a free workshop | Priya signed up for a free workshop
presence | yes | orion | has Orion moved to Go? | Orion's backend was rewritten in Go | Orion's backend is Node.js | Orion's backend is Node.js ; Priya might move Orion's backend
presence | no | al | does Al smoke? | Al gave up smoking
presence | no | al | does Al still drink? | Al no longer drinks stout | Al has a pint of stout every Friday | Al has a pint of stout every Friday
presence | yes | al | is Al coming for Christmas? | Al booked flights to come over for Christmas | | Al is not sure whether he can fly over
presence | yes | al | does Al have a boat? | Al lives in Cork and keeps a small sailboat
presence | no | al | can Al do video calls? | Al prefers phone calls to video calls
presence | no | ben | did Ben run the Berlin marathon? | Ben pulled out of the Berlin marathon | Ben is training for the Berlin marathon | Ben is training for the Berlin marathon
presence | yes | ben | is Ben running at the moment? | Ben has been running again since November | Ben has no running until the fracture heals | Ben has no running until the fracture heals
presence | no | ben | does Ben have a car? | Ben owns a cargo bike and doesn't have a car
presence | no | ben | is Ben hosting game night this month? | Ben isn't hosting board game night in December | Ben hosts a board game night
presence | no | hana | does Hana have a car? | Hana sold her car | Hana drives a red Fiat 500 | Hana drives a red Fiat 500
presence | no | hana | is Hana drinking at the moment? | Hana isn't drinking alcohol until after the spring tour | Hana always orders a glass of sake | Hana always orders a glass of sake
presence | no | hana | is Hana taking a sabbatical? | Hana decided against the sabbatical | Hana might take a sabbatical | Hana might take a sabbatical
presence | no | hana | does Hana still teach private students? | Hana stopped giving private lessons
presence | yes | hana | does Hana have a dog? | Hana adopted a dachshund
presence | yes | lucas | did Lucas go to Lisbon for the offsite? | Lucas booked his flight to Lisbon | | Lucas is not sure whether he is going
presence | no | lucas | is Lucas still on call for Hermes? | Lucas no longer carries the pager
presence | no | lucas | does Lucas have Netflix? | Lucas cancelled Netflix
presence | no | lucas | is Lucas working over Christmas? | Lucas is off from December 1 until January 6
presence | yes | nadia | does Nadia have a car? | Nadia bought a secondhand VW Golf | Nadia doesn't own a car | Nadia doesn't own a car
presence | yes | nadia | is Nadia climbing at the moment? | Nadia has been climbing again | Nadia hurt her shoulder | Nadia hurt her shoulder
presence | no | nadia | is Nadia moving to Glasgow? | Nadia turned down the Glasgow post | Nadia might be moving to Glasgow | Nadia might be moving to Glasgow
presence | no | nadia | can Nadia eat tofu? | Nadia can't eat soy
presence | yes | orion | does Orion have a dark mode? | Orion's dark mode shipped | Orion has no dark mode yet | Orion has no dark mode yet
presence | no | orion | is there an Orion app for tablets? | Orion targets iOS and Android phones but not tablets
presence | unknown | orion | will Orion launch in Ireland first? | Orion might launch in Ireland
presence | no | orion | does Orion keep card numbers? | Orion doesn't store card numbers
presence | no | hermes | can Hermes send SMS? | Hermes no longer sends SMS
presence | no | hermes | does Hermes send WhatsApp messages? | Hermes supports email and push but not WhatsApp ; Hermes might add WhatsApp
presence | unknown | hermes | is WhatsApp support coming to Hermes? | Hermes might add WhatsApp messages ; Hermes supports email and push but not WhatsApp
presence | yes | hermes | is Hermes running on Kubernetes? | Hermes moved to Kubernetes in September ; Hermes is scheduled to move to Kubernetes
# ---- absent: the memory does not hold the answer (never said, or said of another person)
absent | absent | tom | does Tom have a dog? | | | | Maya's brother Eli has a golden retriever ; Jo has a border collie
absent | absent | tom | does Tom keep bees? | | | | Tom's sister Clara keeps bees
absent | absent | leo | is Leo vegan? | | | | Leo's friend Sam is vegan
absent | absent | jo | is Jo a vet? | | | | Jo's partner Dani is a vet
absent | absent | omar | does Omar fly planes? | | | | Omar's wife Amira is an airline pilot
absent | absent | sofia | is Sofia allergic to wasp stings? | | | | Sofia's husband Marc is allergic to wasp stings
absent | absent | kwame | does Kwame have asthma? | | | | Kwame's son Kofi has asthma
absent | absent | leo | does Leo have a dog? | | | | Leo reads Dog Man books
absent | absent | maya | what does Maya's brother do for work? | | | | Maya's brother Eli has a golden retriever
absent | absent | beacon | does Beacon use Kafka? | | | | Atlas doesn't use Kafka
absent | absent | kwame | what is Kwame's favourite beer? | | | | Tom's favourite beer is a Belgian tripel
absent | absent | jo | does Jo play the piano? | | | | Leo quit piano in April
absent | absent | al | is Al into gardening? | | | | Al's wife Rosa is a keen gardener
absent | absent | ben | does Ben play the cello? | | | | Ben's daughter Mia plays the cello
absent | absent | hana | does Hana work for Google? | | | | Hana's brother Ken works for Google
absent | absent | lucas | is Lucas a chef? | | | | Lucas's partner Eva is a pastry chef
absent | absent | nadia | does Nadia have a cat? | | | | Nadia's twin sister Leila has a cat
absent | absent | priya | does Priya have a dog? | | | | Priya has two cats ; Hana adopted a dachshund
absent | absent | al | is Al allergic to anything? | | | | Ben is allergic to penicillin
absent | absent | orion | does Orion use Kafka? | | | | Hermes uses Kafka for its queues
absent | absent | hermes | which database does Hermes use? | | | | Hermes avoids Redis
absent | absent | lucas | does Lucas drink coffee? | | | | Lucas drinks only sparkling water ; Priya has started drinking coffee again ; Ben prefers oat milk over dairy in his coffee
absent | absent | ben | has Ben got a dog? | | | | Hana adopted a dachshund
absent | absent | priya | is Priya from Pune? | | | | Priya's mother is visiting from Pune ; Priya isn't going to Orion's launch party
# ---- more heldout questions
presence | no | al | does Al have a smartphone? | Al doesn't have a smartphone
presence | unknown | al | is Al selling his boat? | Al is thinking about selling the sailboat
presence | no | al | does Al have internet at the cottage? | Al has no wifi at his cottage
presence | yes | lucas | does Lucas drive? | Lucas has a Tesla
presence | no | lucas | does Lucas enjoy hackathons? | Lucas isn't keen on hackathons
presence | unknown | lucas | is the Hermes scheduler being rewritten in Go? | Lucas might rewrite Hermes's scheduler | Hermes is written in Rust, not Go
presence | yes | orion | does Orion have a design system? | Orion's design system launched | there is no shared design system yet | there is no shared design system yet
presence | no | hermes | is there any Twilio code left in Hermes? | Hermes has been free of the old Twilio code
presence | yes | nadia | does Nadia wear a helmet when she climbs? | Nadia never climbs without a helmet
presence | unknown | priya | is Priya covering Hermes over the holidays? | Priya is not sure whether she can cover Hermes | Hermes has no on-call rotation over the holidays
negated | - | hermes | which email failures Hermes does not retry | Hermes doesn't retry email bounces | Hermes never loses a message
negated | - | priya | a time to meet Priya that isn't first thing | Priya takes the 7:40 train from Reading and hates being booked
negated | - | hana | a main course for Hana with no red meat and no wheat | Hana hasn't eaten beef ; Hana avoids gluten
affirmative | - | hermes | who covers on-call for Hermes | Hermes's on-call rota is Lucas's team ; Hermes has no on-call rotation over the holidays
affirmative | - | priya | how does Priya get to the office | Priya rides a Brompton ; Priya takes the 7:40 train
absent | absent | nadia | does Nadia smoke? | | | | Al gave up smoking
absent | absent | lucas | is Lucas allergic to latex? | | | | Priya is allergic to latex ; Lucas is allergic to peanuts
negated | - | kwame | a team night out Kwame would enjoy that doesn't involve singing | Kwame isn't keen on karaoke
presence | no | jo | should I get Jo tickets to a musical? | Jo is not a fan of musicals | | | Jo got free tickets to the Arctic Monkeys gig
negated | - | nadia | something for Nadia to drink at dinner other than wine | Nadia isn't keen on wine
presence | no | al | would Al like garlic bread with dinner? | Al isn't keen on garlic
# ---- the question's own negation is its topic, not an exclusion ("why couldn't ...")
affirmative | - | kwame | why couldn't Kwame make the Thursday standups? | Kwame can't make Thursday standups | | | Kwame's physio has ended
affirmative | - | omar | why didn't Omar go to the Lisbon offsite? | Omar is skipping the Lisbon offsite
affirmative | - | hermes | why doesn't Hermes send SMS any more? | Hermes no longer sends SMS
affirmative | - | nadia | why can't Nadia have tofu? | Nadia can't eat soy
presence | yes | priya | any pets at Priya's place? | Priya has two cats
presence | yes | omar | any dietary restrictions for Omar? | Omar eats halal and doesn't touch pork
presence | yes | al | does Al need specs to read? | Al wears glasses for reading
presence | no | al | does Al wear his glasses at the wheel? | Al wears glasses for reading but not for driving
presence | yes | maya | does Maya wear glasses? | Maya got new glasses in October
affirmative | - | lucas | what sport is Lucas watching this winter | Lucas is glued to the Ashes series ; Lucas is a big fan of cricket
absent | absent | kwame | does Kwame wear glasses? | | | | Maya got new glasses in October
""".strip()

PEOPLE = {"maya", "tom", "leo", "jo", "omar", "sofia", "kwame", "priya", "al", "ben", "hana", "lucas", "nadia"}
PROJECTS = {"atlas", "beacon", "orion", "hermes"}
TYPES = {"negated": 45, "affirmative": 25, "presence": 50, "absent": 20}  # minimum counts
NOT_CONCEPTS = {  # dates, times and light verbs are never concepts
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "morning",
    "evening",
    "night",
    "week",
    "weekend",
    "month",
    "year",
    "today",
    "tomorrow",
    "noon",
    "spring",
    "summer",
    "autumn",
    "winter",
    "christmas",
    "halloween",
    "quarter",
    "give",
    "gave",
    "given",
    "take",
    "took",
    "taken",
    "make",
    "made",
    "have",
    "had",
    "has",
    "get",
    "got",
    "do",
    "did",
    "done",
    "keep",
    "kept",
    "put",
    "stop",
    "stopped",
    "quit",
    "used",
    "free",
    "never",
    "no",
    "not",
}


def forms(concept: str) -> set[str]:
    """Word forms under which a concept may appear in a note's text."""
    out = {concept, concept + "s", concept + "es", concept + "ing", concept + "ed", concept + "d"}
    if concept.endswith("y"):
        out.add(concept[:-1] + "ies")
    return out


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower().replace("’", "'")))


def parse_notes() -> list[dict]:
    notes, anchor, split = [], None, None
    for line in NOTES.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("=="):
            anchor, split = [p.strip() for p in line.strip("= ").split("|")][:2]
            continue
        parts = [p.strip() for p in line.split("|")]
        parts += [""] * (7 - len(parts))
        if len(parts) != 7:
            raise SystemExit(f"bad note line: {line}")
        date, text, has, not_has, no_state, supersedes, subject = parts
        notes.append(
            {
                "date": date,
                "text": text,
                "subject": subject or anchor,
                "about": anchor,
                "has": has.split(),
                "not_has": not_has.split(),
                "no_state": no_state.split(),
                "supersedes": supersedes or None,
                "split": split,
            }
        )
    # ids in the order the memory received the notes (by date; same-day notes keep their order here)
    notes.sort(key=lambda n: n["date"])
    for i, n in enumerate(notes, 1):
        n["id"] = f"m-{i:03d}"
    return notes


def find(notes: list[dict], piece: str, problems: list[str], where: str) -> str | None:
    hits = [n for n in notes if piece in n["text"]]
    if len(hits) != 1:
        problems.append(f"{where}: {piece!r} matches {len(hits)} notes")
        return None
    return hits[0]["id"]


def check_notes(notes: list[dict], problems: list[str]) -> None:
    ids, texts = Counter(n["id"] for n in notes), Counter(n["text"] for n in notes)
    problems += [f"duplicate note id {i}" for i, c in ids.items() if c > 1]
    problems += [f"duplicate note text {t!r}" for t, c in texts.items() if c > 1]
    by_id = {n["id"]: n for n in notes}
    subject_split = {}
    for n in notes:
        where = f"{n['id']} ({n['text'][:40]})"
        try:
            datetime.date.fromisoformat(n["date"])
        except ValueError:
            problems.append(f"{where}: bad date {n['date']!r}")
        if n["split"] not in ("dev", "heldout"):
            problems.append(f"{where}: bad split {n['split']!r}")
        for key in ("subject", "about"):
            if subject_split.setdefault(n[key], n["split"]) != n["split"]:
                problems.append(f"{where}: {key} {n[key]!r} is in both splits")
        if n["about"] not in PEOPLE | PROJECTS:
            problems.append(f"{where}: unknown anchor {n['about']!r}")
        labels = n["has"] + n["not_has"] + n["no_state"]
        if len(set(labels)) != len(labels):
            problems.append(f"{where}: a concept twice or in two lists: {labels}")
        text_words = words(n["text"])
        for c in labels:
            if c != c.lower() or not re.fullmatch(r"[a-z0-9]+", c):
                problems.append(f"{where}: concept {c!r} is not one lower-case word")
            if not forms(c) & text_words:
                problems.append(f"{where}: {c!r} is not in the text")
        for c in n["has"] + n["not_has"]:
            if c in NOT_CONCEPTS:
                problems.append(f"{where}: {c!r} is a date or light verb, not a concept")
        if n["subject"] == n["about"]:
            if n["about"] not in n["has"]:
                problems.append(f"{where}: the subject's name {n['about']!r} is not in has")
        else:
            if not n["subject"].startswith(n["about"] + "'s "):
                problems.append(f"{where}: another person's subject {n['subject']!r} is not '{n['about']}'s ...'")
            if n["has"] or n["not_has"]:
                problems.append(f"{where}: another person's fact asserts states {n['has']} {n['not_has']}")
        if n["supersedes"]:
            old_id = find(notes, n["supersedes"], problems, f"{where} supersedes")
            if old_id:
                old = by_id[old_id]
                if old["about"] != n["about"] or old["date"] >= n["date"] or old_id == n["id"]:
                    problems.append(f"{where}: supersedes {old_id}, not an earlier note about {n['about']}")
                n["supersedes"] = old_id
            else:
                n["supersedes"] = None


def parse_questions(notes: list[dict], problems: list[str]) -> list[dict]:
    split_of = {n["about"]: n["split"] for n in notes}
    by_id = {n["id"]: n for n in notes}
    questions = []
    for line in QUESTIONS.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split("|")]
        parts += [""] * (8 - len(parts))
        if len(parts) != 8:
            problems.append(f"bad question line: {line}")
            continue
        qtype, answer, subject, question, answers, contradicting, superseded, decoys = parts
        q = {"id": f"q-{len(questions) + 1:03d}", "question": question, "type": qtype, "subject": subject}
        where = f"{q['id']} ({question})"
        if qtype not in TYPES:
            problems.append(f"{where}: unknown type {qtype!r}")
        if subject not in split_of:
            problems.append(f"{where}: unknown subject {subject!r}")
        q["split"] = split_of.get(subject)
        if qtype == "presence":
            if answer not in ("yes", "no", "unknown"):
                problems.append(f"{where}: a presence answer is yes, no or unknown, not {answer!r}")
            q["answer"] = answer
        elif qtype == "absent":
            if answer != "absent":
                problems.append(f"{where}: an absent question's answer is 'absent'")
            q["answer"] = "absent"
        else:
            if answer != "-":
                problems.append(f"{where}: only presence and absent questions carry an answer")
            q["answer"] = None
        for key, field in (
            ("answer_notes", answers),
            ("contradicting_notes", contradicting),
            ("superseded_notes", superseded),
            ("decoy_notes", decoys),
        ):
            pieces = [p.strip() for p in field.split(";") if p.strip()]
            q[key] = [i for i in (find(notes, p, problems, f"{where} {key}") for p in pieces) if i]
            if len(set(q[key])) != len(q[key]):
                problems.append(f"{where}: a note twice in {key}")
        if qtype == "absent":
            if q["answer_notes"] or q["superseded_notes"]:
                problems.append(f"{where}: an absent question has no answer note")
            if not q["decoy_notes"]:
                problems.append(f"{where}: an absent question names its near misses (decoys)")
        else:
            if not q["answer_notes"]:
                problems.append(f"{where}: no answer note")
        for i in q["answer_notes"] + q["superseded_notes"] + q["contradicting_notes"] + q["decoy_notes"]:
            if by_id[i]["split"] != q["split"]:
                problems.append(f"{where}: note {i} is in {by_id[i]['split']}, the question in {q['split']}")
        if set(q["answer_notes"]) & set(q["contradicting_notes"] + q["decoy_notes"]):
            problems.append(f"{where}: an answer note is also contradicting or a decoy")
        if q["answer_notes"] and q["superseded_notes"]:
            newest = by_id[q["answer_notes"][0]]["date"]
            for i in q["superseded_notes"]:
                if by_id[i]["date"] >= newest or i in q["answer_notes"]:
                    problems.append(f"{where}: superseded {i} is not older than the best answer")
        questions.append(q)
    for field in ("id", "question"):
        for value, count in Counter(q[field] for q in questions).items():
            if count > 1:
                problems.append(f"duplicate question {field} {value!r}")
    return questions


def check_balance(notes: list[dict], questions: list[dict], problems: list[str]) -> None:
    for name, rows in (("notes", notes), ("questions", questions)):
        share = sum(r["split"] == "dev" for r in rows) / len(rows)
        if not 0.4 <= share <= 0.6:
            problems.append(f"{name}: dev share {share:.2f} is outside 0.40-0.60")
    if len(notes) < 300:
        problems.append(f"{len(notes)} notes, fewer than 300")
    people = {n["about"] for n in notes} & PEOPLE
    projects = {n["about"] for n in notes} & PROJECTS
    if not (12 <= len(people) <= 14 and 4 <= len(projects) <= 5):
        problems.append(f"{len(people)} people and {len(projects)} projects")
    if sum(n["supersedes"] is not None for n in notes) < 15:
        problems.append("fewer than 15 revisions")
    counts = Counter(q["type"] for q in questions)
    for qtype, least in TYPES.items():
        if counts[qtype] < least:
            problems.append(f"{counts[qtype]} {qtype} questions, fewer than {least}")
        for split in ("dev", "heldout"):
            if not any(q["type"] == qtype and q["split"] == split for q in questions):
                problems.append(f"no {qtype} question in {split}")
    answers = Counter(q["answer"] for q in questions if q["type"] == "presence")
    if answers["no"] * 2 < counts["presence"]:
        problems.append(f"presence answers {dict(answers)}: fewer than half are no")
    if not any(q["superseded_notes"] for q in questions):
        problems.append("no question is answered by a revision")


PATTERN_RULES = [  # (tag, regex on the lower-cased text, extra condition on the note): derived, for breakdowns only
    (
        "past_habit",
        r"\b(stopped|quit|gave up|cancell?ed|used to|no longer|dropped|sold|pulled out|switched from)\b",
        lambda n: bool(n["not_has"]),
    ),
    ("not_keen", r"isn't keen|not a fan|isn't into", None),
    (
        "against",
        r"allergic|\bavoids\b|can't stand|\bhates\b|refuses|can't eat|can't handle|decided against|"
        r"turned down|\bskipping\b|\bskipped\b",
        None,
    ),
    ("prefers_a_over_b", r"\bprefers\b|rather than|would rather|'d rather|\binstead\b", None),
    ("hedge", r"\bmight\b|not sure whether|considering|thinking about|scheduled to|nothing is decided|on hold", None),
    ("until_since", r"\buntil\b|\bsince\b", None),
    ("free_not_negating", r"\bfree\b(?! of)", lambda n: not re.search(r"-free", n["text"])),
    ("free_negating", r"-free\b|\bfree of\b", None),
    (
        "pseudo_negation",
        r"never (skips|misses|drops|loses|goes anywhere without|climbs without)|no problem|"
        r"doesn't swim without",
        None,
    ),
    ("mixed_polarity", r".", lambda n: bool(n["not_has"]) and len(set(n["has"]) - {n["about"]}) > 0),
    ("short_name", r".", lambda n: any(len(c) <= 2 for c in n["has"] + n["not_has"] + n["no_state"])),
    ("s_final_name", r".", lambda n: bool(S_FINAL & set(n["has"] + n["not_has"] + n["no_state"]))),
    ("light_verb_or_date", r".", lambda n: bool(set(n["no_state"]) & NOT_CONCEPTS)),
    ("other_person", r".", lambda n: n["subject"] != n["about"]),
]
S_FINAL = {
    "atlas",
    "hermes",
    "lucas",
    "kubernetes",
    "redis",
    "postgres",
    "maths",
    "ceramics",
    "ios",
    "sms",
    "analytics",
    "series",
    "glasses",
    "ashes",
}


def tag_patterns(notes: list[dict]) -> None:
    revised = {n["supersedes"] for n in notes if n["supersedes"]}
    for n in notes:
        text = n["text"].lower().replace("’", "'")
        tags = [tag for tag, rx, cond in PATTERN_RULES if re.search(rx, text) and (cond is None or cond(n))]
        if n["supersedes"]:
            tags.append("revises")
        if n["id"] in revised:
            tags.append("revised_later")
        n["patterns"] = tags


def build() -> tuple[list[dict], list[dict]]:
    problems: list[str] = []
    notes = parse_notes()
    check_notes(notes, problems)
    tag_patterns(notes)
    questions = parse_questions(notes, problems)
    check_balance(notes, questions, problems)
    if problems:
        raise SystemExit("refusing to write:\n" + "\n".join(problems))
    return notes, questions


NOTE_FIELDS = (
    "id",
    "text",
    "date",
    "subject",
    "about",
    "has",
    "not_has",
    "no_state",
    "split",
    "supersedes",
    "patterns",
)
QUESTION_FIELDS = (
    "id",
    "question",
    "type",
    "answer",
    "subject",
    "answer_notes",
    "contradicting_notes",
    "superseded_notes",
    "decoy_notes",
    "split",
)


def counts_table(notes: list[dict], questions: list[dict]) -> str:
    """The counts table of README.md (printed by main)."""
    splits = ("dev", "heldout", None)
    ns = {sp: [n for n in notes if sp in (None, n["split"])] for sp in splits}
    qs = {sp: [q for q in questions if sp in (None, q["split"])] for sp in splits}

    def row(label, fn):
        return f"| {label} | " + " | ".join(str(fn(sp)) for sp in splits) + " |"

    def anchors(sp):
        about = {n["about"] for n in ns[sp]}
        people = [a.capitalize() for a in sorted(about & PEOPLE, key=[n["about"] for n in notes].index)]
        projects = [a.capitalize() for a in sorted(about & PROJECTS, key=[n["about"] for n in notes].index)]
        return f"{len(people)} people ({', '.join(people)}), {len(projects)} projects ({', '.join(projects)})"

    def presence(sp):
        c = Counter(q["answer"] for q in qs[sp] if q["type"] == "presence")
        return f"{sum(c.values())} ({c['no']} / {c['yes']} / {c['unknown']})"

    lines = [
        "| | dev | heldout | all |",
        "|---|---|---|---|",
        row("anchors", anchors),
        row("notes", lambda sp: len(ns[sp])),
        row("of them another person's fact", lambda sp: sum(n["subject"] != n["about"] for n in ns[sp])),
        row("notes revising an earlier one (`supersedes`)", lambda sp: sum(bool(n["supersedes"]) for n in ns[sp])),
        row("notes with a NOT_HAS", lambda sp: sum(bool(n["not_has"]) for n in ns[sp])),
        row(
            "has / not_has / no_state labels",
            lambda sp: " / ".join(str(sum(len(n[k]) for n in ns[sp])) for k in ("has", "not_has", "no_state")),
        ),
    ]
    for qtype in TYPES:
        if qtype == "presence":
            lines.append(row("presence questions (no / yes / unknown)", presence))
        else:
            lines.append(row(f"{qtype} questions", lambda sp, t=qtype: sum(q["type"] == t for q in qs[sp])))
    lines += [
        row("questions, all", lambda sp: len(qs[sp])),
        row(
            "questions answered by a revision (`superseded_notes`)",
            lambda sp: sum(bool(q["superseded_notes"]) for q in qs[sp]),
        ),
        row("questions with contradicting notes", lambda sp: sum(bool(q["contradicting_notes"]) for q in qs[sp])),
    ]
    tags = {sp: Counter(p for n in ns[sp] for p in n["patterns"]) for sp in ("dev", "heldout")}
    concepts = len({c for n in notes for c in n["has"] + n["not_has"]})
    lines += [
        "",
        f"{concepts} distinct concepts. Pattern tags (notes, dev / heldout): "
        + ", ".join(f"{tag} {tags['dev'][tag]} / {tags['heldout'][tag]}" for tag, _, _ in PATTERN_RULES)
        + ".",
    ]
    return "\n".join(lines)


def main() -> None:
    notes, questions = build()
    with open(HERE / "notes.jsonl", "w") as f:
        for n in notes:
            f.write(json.dumps({k: n[k] for k in NOTE_FIELDS}) + "\n")
    with open(HERE / "questions.jsonl", "w") as f:
        for q in questions:
            f.write(json.dumps({k: q[k] for k in QUESTION_FIELDS}) + "\n")
    print(
        f"notes: {len(notes)} {dict(Counter(n['split'] for n in notes))}, "
        f"{sum(n['supersedes'] is not None for n in notes)} revisions, "
        f"{sum(len(n['has']) for n in notes)} has, {sum(len(n['not_has']) for n in notes)} not_has, "
        f"{sum(len(n['no_state']) for n in notes)} no_state"
    )
    print("questions:", dict(Counter((q["type"], q["split"]) for q in questions)))
    print("presence answers:", dict(Counter((q["answer"], q["split"]) for q in questions if q["type"] == "presence")))
    print()
    print(counts_table(notes, questions))


if __name__ == "__main__":
    main()
