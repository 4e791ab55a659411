"""Writes notes.jsonl and queries.jsonl: short agent notes with the nouns each affirms / negates,
and negated questions over them. Written and labelled by an engineer of this project (README.md has
the rules). Split by a fixed hash of the text, not by looking. Run from this folder:

    python build_notes.py
"""

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent

# category | text | affirmed nouns | negated nouns [| unstated nouns]   (nouns: space separated, lower
# case, singular; unstated: mentioned, with no state about the note's subject: a hedge, another
# person's fact)
NOTES = """
food | User does not drink coffee, only green tea. | tea | coffee
food | Alice is allergic to peanuts but not to almonds. | almond | peanut
food | User likes sushi but doesn't eat raw oysters. | sushi | oyster
food | User is vegetarian: no meat, no fish, but eggs and cheese are fine. | egg cheese | meat fish
food | User takes lemon instead of honey in tea. | lemon tea | honey
food | User never eats pork. | | pork
food | Bob doesn't like mushrooms or olives on his pizza. | pizza | mushroom olive
food | Sam eats everything except shellfish. | | shellfish
food | The user's diet is free of gluten and lactose. | diet | gluten lactose
food | Breakfast: oatmeal, banana, no sugar. | breakfast oatmeal banana | sugar
food | User drinks neither alcohol nor soda. | | alcohol soda
food | No doubt the user loves spicy curry. | curry |
food | Without a doubt, dark chocolate is the user's favourite snack. | chocolate snack |
food | User has no problem with garlic. | garlic |
food | Not only pasta but also rice is fine for dinner. | pasta rice dinner |
food | User no longer drinks wine. | | wine
food | Maria can't eat strawberries; raspberries are fine. | raspberry | strawberry
food | User takes tea without milk or sugar. | tea | milk sugar
food | User orders decaf rather than espresso after lunch. | decaf lunch | espresso
food | User hates cilantro. |  | cilantro
food | User dislikes loud restaurants but enjoys quiet cafes. | cafe | restaurant
food | User avoids caffeine after 3 pm. |  | caffeine
food | The kids won't eat broccoli, only carrots. | carrot | broccoli
food | User isn't keen on blue cheese. | | cheese
food | Favourite fruits: mango and kiwi; no grapefruit. | fruit mango kiwi | grapefruit
food | User doesn't want ice in a smoothie. | smoothie | ice
food | Lunch order: chicken salad with no onions and no croutons. | lunch chicken salad | onion crouton
food | User eats eggs but not bacon. | egg | bacon
food | There is no milk left in the fridge. | fridge | milk
food | The pantry has flour, rice and pasta but no sugar. | pantry flour rice pasta | sugar
food | User gave up sugar in January. |  | sugar
food | User does not take sugar in coffee. | coffee | sugar
food | User likes both tea and coffee. | tea coffee |
food | Tom is lactose intolerant, so no cheese or yogurt. |  | lactose cheese yogurt
food | User is not vegan and eats fish and eggs. | fish egg |
food | User prefers red wine to beer. | wine | beer
food | User drinks coffee at the office but tea at home. | coffee office tea home |
food | Dinner tonight: salmon and rice, no dessert. | dinner salmon rice | dessert
food | User never orders dessert at restaurants. | restaurant | dessert
food | User is happy with any pizza except pineapple pizza. | pizza | pineapple
food | User buys bread without seeds. | bread | seed
food | The user's favourite snack is popcorn, not chips. | snack popcorn | chip
food | User eats chocolate but no candy. | chocolate | candy
food | Peanuts are fine for Leo; only cashews are a problem. | peanut cashew |
food | Nina drinks water instead of soda at dinner. | water dinner | soda
food | User has stopped eating red meat. |  | meat
food | User loves pizza and pasta. | pizza pasta |
food | User would rather have juice than soda. | juice | soda
food | Sandwich for lunch: no mayo, extra tomato. | sandwich lunch tomato | mayo
food | User's kitchen has no microwave, only an oven. | kitchen oven | microwave
food | User likes cheese on everything. | cheese |
food | User eats spicy food without complaint. | food | complaint
food | User drinks tea with honey every morning. | tea honey |
food | Coffee is fine, but no espresso after dinner. | coffee dinner | espresso
food | User never skips breakfast. | breakfast |
food | Smoothie recipe: banana, spinach, no yogurt. | smoothie recipe banana spinach | yogurt
food | User cannot stand olives. | | olive
food | User buys organic eggs and milk every week. | egg milk |
food | There's no soda in the house anymore. | house | soda
food | User eats rice, not bread, with curry. | rice curry | bread
food | User takes coffee black: no milk, no sugar. | coffee | milk sugar
food | The user eats fish but none of the shellfish. | fish | shellfish
food | User avoids gluten, so no bread, no pasta. |  | gluten bread pasta
food | User likes dark chocolate rather than milk chocolate. | chocolate | milk
food | The user loves mango juice. | mango juice |
food | User drinks beer only on weekends, never wine. | beer | wine
food | No onions or garlic in anything for Priya. | | onion garlic
food | User eats no sugar except fruit. | fruit | sugar
food | User wants a salad with chicken, not tofu. | salad chicken | tofu
food | User's go-to snack is almonds. | snack almond |
food | User likes yogurt with honey. | yogurt honey |
food | User has a sweet tooth and loves candy. | candy |
food | The restaurant the user liked had no vegetarian options. | restaurant | option
food | User doesn't eat breakfast on weekdays. | | breakfast
health | User has asthma and carries an inhaler. | asthma inhaler |
health | User has no allergies. | | allergy
health | No known drug allergies. | | drug allergy
health | User is allergic to penicillin, not to amoxicillin. | amoxicillin | penicillin
health | User takes vitamin D daily but no other supplements. | vitamin | supplement
health | User has had no back pain since the surgery. | surgery | pain
health | User quit smoking two years ago. |  | smoking
health | User has had no migraines since May. | | migraine
health | User wears a brace on the left knee, not a cast. | brace knee | cast
health | Knee pain is gone; no more physiotherapy. | knee pain | physiotherapy
health | User no longer uses a CPAP machine. | | cpap machine
health | User has diabetes and checks glucose every morning. | diabetes glucose |
health | The doctor said the user does not need insulin. | | insulin
health | User has hypertension but no heart disease. | hypertension | heart disease
health | No fever, cough or sore throat this week. | | fever cough throat
health | User has a cough but no fever. | cough | fever
health | User is pregnant and avoids alcohol and sushi. |  | alcohol sushi
health | User does yoga, but never lifts weights. | yoga | weight
health | User is not on any medication. | | medication
health | User takes ibuprofen for headaches, never aspirin. | ibuprofen headache | aspirin
health | User has had no dental checkup this year. | | checkup
health | The blood test showed no anemia. | test blood | anemia
health | User has insomnia and takes melatonin. | insomnia melatonin |
health | User does not take melatonin anymore. | | melatonin
health | User's asthma is mild; no inhaler needed at night. | asthma | inhaler
health | User has a gym membership but never goes. | gym membership |
health | User cycles to work instead of taking the car. | | car
health | User has no history of heart disease. | | history heart disease
health | User tested negative for covid. | | covid
health | User had covid last winter and lost the sense of smell. | covid smell |
health | User takes no sleeping pills. | | pill
health | User takes a pill for blood pressure every evening. | pill blood pressure |
health | User is allergic to pollen and dust, nothing else. |  | pollen dust
health | User is free of pain after the operation. | operation | pain
health | User is pain-free now. | | pain
health | User doesn't wear glasses. | | glass
health | User wears glasses for reading. | glass reading |
health | User runs every morning without a watch. | | watch
health | User goes to the gym on Mondays and Thursdays. | gym |
health | No gym this week because of the knee injury. | knee injury | gym
health | User has a dentist appointment but no cavities. | dentist appointment | cavity
health | User has no health insurance. | | insurance
health | User sees a therapist every week. | therapist |
health | User does not smoke and rarely drinks alcohol. | alcohol |
health | User does swimming, cycling and yoga. | swimming cycling yoga |
health | User stopped cycling after the accident. | accident | cycling
health | User never did a marathon, only a half. | | marathon
health | User has eczema and uses a cream without fragrance. | eczema cream | fragrance
health | User's sleep is fine; no snoring. | sleep | snoring
travel | The office has no parking except on weekends. | office | parking
travel | Packed: passport, charger, no umbrella. | passport charger | umbrella
travel | User prefers an aisle seat, not a window seat. | aisle seat | window
travel | User wants a hotel with a pool and a gym. | hotel pool gym |
travel | The hotel in Rome had no pool. | hotel | pool
travel | User never checks a bag; carry-on only. | | bag
travel | User has a passport but no visa for India. | passport | visa
travel | User's flight was cancelled. |  | flight
travel | The flight to Oslo is not available on Sundays. | | flight
travel | No breakfast included at the hotel. | hotel | breakfast
travel | Hotel booked: breakfast included, no parking. | hotel breakfast | parking
travel | User rented a car but not a GPS. | car | gps
travel | User travels without a laptop on vacations. | vacation | laptop
travel | User likes trains rather than planes. | train | plane
travel | User does not have a driving licence. | | licence
travel | User has a driving licence but no car. | licence | car
travel | The apartment in Lisbon has a balcony but no elevator. | apartment balcony | elevator
travel | User packed sunscreen, a hat and sandals. | sunscreen hat sandal |
travel | Forgot the charger; the adapter is packed. | charger adapter |
travel | User didn't pack a jacket. | | jacket
travel | No jacket needed; pack shorts instead. | short | jacket
travel | User needs a hotel with no stairs. | hotel | stair
travel | The hotel has a pool but no sauna. | hotel pool | sauna
travel | The hotel has a sauna and a spa. | hotel sauna spa |
travel | User stays at hostels, never at resorts. | hostel | resort
travel | The train has wifi but no dining car. | train wifi | car
travel | User booked a window seat on the train. | window seat train |
travel | User has no travel insurance for the trip. | trip | insurance
travel | User has travel insurance. | insurance |
travel | User prefers direct flights, no layovers. | flight | layover
travel | The resort has kayaks but not bikes. | resort kayak | bike
travel | The campsite has showers and no wifi. | campsite shower | wifi
travel | User doesn't need a visa for Japan. | | visa
travel | User lost the passport in Madrid. | passport |
travel | User wants a quiet hotel room without a view. | hotel room | view
travel | The cabin has a fireplace, a kitchen and no TV. | cabin fireplace kitchen | tv
travel | The Airbnb has parking and a washing machine. | parking machine |
travel | User never takes taxis; uses the metro instead. | metro | taxi
travel | User wants a rental car with automatic transmission. | car transmission |
travel | User is not flying this year; trips by train only. | trip train | flying
travel | Boarding pass saved in the wallet app. | pass wallet app |
travel | The hotel gym is closed for renovation. | hotel gym renovation |
travel | User's luggage did not arrive. | | luggage
travel | User prefers a room with a bathtub rather than a shower. | room bathtub | shower
travel | The beach house has no air conditioning. | beach house | conditioning
travel | User likes beaches, museums and markets. | beach museum market |
travel | User doesn't like museums much; prefers hiking. | hiking | museum
travel | The tour includes lunch but not tickets. | tour lunch | ticket
travel | Tickets for the concert are printed. | ticket concert |
travel | User has a bike and a helmet. | bike helmet |
work | User has no meetings on Fridays. | | meeting
work | User does not work weekends. | |
work | User prefers email to phone calls. | email | phone call
work | User doesn't want calls before 10 am; email is fine. | email | call
work | The team meeting is on Monday, no agenda yet. | team meeting | agenda
work | User's laptop has no webcam; uses an external camera. | laptop camera | webcam
work | User uses a Mac, not a PC. | mac | pc
work | User has two monitors and a standing desk. | monitor desk |
work | User's desk has no drawer. | desk | drawer
work | User works remotely, with no commute. | | commute
work | User rides a bike to the office. | bike office |
work | The project has no budget this quarter. | project | budget
work | User's boss approved the budget. | budget |
work | The report is due Friday; no slides needed. | report | slide
work | User needs slides and a handout for the talk. | slide handout talk |
work | User has no access to the production database. | database | access
work | User has access to the staging server. | access server |
work | User does not use Slack; the team uses Teams. | team | slack
work | User hates open offices. |  | office
work | User's office has a window and a plant. | office window plant |
work | User has no deadline this week. | | deadline
work | The deadline moved to May. | deadline |
work | User is not in the Tuesday meeting anymore. | | meeting
work | User joins the standup every morning. | standup |
work | User never writes on paper, only in Notion. | | paper
work | User keeps a paper notebook for meetings. | paper notebook meeting |
work | No lunch meetings, please. | | lunch meeting
work | User likes lunch meetings with clients. | lunch meeting |
work | User has no direct reports. | | report
work | User's contract has no bonus but includes stock options. | contract stock option | bonus
work | User got a bonus this year. | bonus |
work | User doesn't have a company phone. | | phone
work | User's phone is an Android, not an iPhone. | phone android | iphone
work | User has an iPhone and an iPad. | iphone ipad |
work | The printer on floor 3 has no toner. | printer | toner
work | User prints nothing; no printer at home. | home | printer
work | The interview is on Zoom, not in person. | interview zoom |
work | User is not interviewing for other jobs. | | job
work | User has a job offer from a bank. | job offer bank |
work | The conference has no registration fee. | conference | fee
work | User is speaking at the conference. | conference |
work | No travel budget for the conference. | conference | budget
work | User prefers meetings in the morning rather than the afternoon. | meeting |
work | User's calendar has no free slot on Wednesday. | calendar | slot
work | User needs a quiet room for the call. | room call |
work | User never schedules meetings after 5 pm. | | meeting
work | User's team uses Jira and Confluence. | team jira confluence |
work | User doesn't use Jira anymore. | | jira
home | User has a dog but no cat. | dog | cat
home | User has two cats and no dog. | cat | dog
home | The apartment has a dishwasher but not a dryer. | apartment dishwasher | dryer
home | The house has a garden and a garage. | house garden garage |
home | The flat has no garden, only a balcony. | balcony | garden
home | There is no garage; the car is parked on the street. | car street | garage
home | User does not own a car. | | car
home | User owns a car and a bike. | car bike |
home | The building has no elevator. | building | elevator
home | User's building has an elevator and a gym. | building elevator gym |
home | The heating is broken. | heating |
home | There is no heating in the garage. | garage | heating
home | User has a smart thermostat. | thermostat |
home | No smart speakers in the house; the user dislikes them. | house | speaker
home | User has a speaker in the kitchen. | speaker kitchen |
home | The fridge is empty except for milk. | fridge milk |
home | User keeps no plants; the cat eats them. | cat | plant
home | User has many plants and a cactus. | plant cactus |
home | The kitchen has a gas stove, not induction. | kitchen stove | induction
home | User has no dishwasher. | | dishwasher
home | User wants a sofa without cushions. | sofa | cushion
home | User bought a new sofa and a rug. | sofa rug |
home | The living room has no TV. | room | tv
home | User turns on the TV only on Sundays. | tv |
home | User's house has solar panels but no battery. | house panel | battery
home | User has a vacuum robot but no mop. | vacuum robot | mop
home | The garden has roses and no weeds. | garden rose | weed
home | User doesn't have a washing machine; uses the laundromat. | laundromat | machine
home | Rent includes water and electricity but not internet. | rent water electricity | internet
home | User's internet is fiber, never down. | internet fiber |
home | The basement has no windows. | basement | window
home | There are no smoke detectors in the hallway. | hallway | detector
home | User installed smoke detectors in every room. | detector room |
home | The house has no alarm system. | house | alarm system
home | User set up an alarm for 6 am. | alarm |
home | User has a guest room with a bed but no desk. | room bed | desk
home | User's kids share a bedroom. |  |  | bedroom
home | No candles in the apartment, per the lease. | apartment lease | candle
home | User likes candles and incense. | candle incense |
home | User's house does not have a pool. | house | pool
home | User has a pool and a hot tub. | pool tub |
home | The garage has a workbench, no tools. | garage workbench | tool
home | User keeps tools in the shed. | tool shed |
home | The shed has no lock. | shed | lock
home | User changed the lock on the front door. | lock door |
pet | User's dog stays in a crate, not on the sofa. | dog crate | sofa
pet | The dog eats dry food, no treats. | dog food | treat
pet | Max the dog is afraid of thunder. | dog thunder |
pet | The cat has no vaccinations yet. | cat | vaccination
pet | The cat had its vaccinations in March. | cat vaccination |
pet | User's rabbit eats hay and carrots, never chocolate. | rabbit hay carrot | chocolate
pet | User has no pets. | | pet
pet | User has a parrot and a turtle. | parrot turtle |
pet | The parrot doesn't speak. | parrot |
pet | Bella the cat is an indoor cat; no garden access. | cat | garden access
pet | The dog needs a walk twice a day but no leash in the park. | dog walk park | leash
pet | The dog walker comes on weekdays, not weekends. | dog walker |
pet | User is allergic to cats but not to dogs. | dog | cat
pet | User wants a dog, not a cat. | dog | cat
pet | The fish tank has no filter. | fish tank | filter
pet | The hamster has a wheel and a tunnel. | hamster wheel tunnel |
pet | User's cat is afraid of the vacuum. | cat vacuum |
pet | The dog has no microchip. | dog | microchip
pet | The dog got a microchip and a collar. | dog microchip collar |
pet | The cat never goes outside without a harness. | cat harness |
pet | The vet said no more treats for the dog. | vet dog | treat
pet | No dogs allowed in the office. | office | dog
pet | The office allows dogs. | office dog |
pet | The cat naps on the bed, not in the basket. | cat bed | basket
schedule | User has no classes on Wednesday. | | class
schedule | Piano lessons on Tuesdays; no lesson next week. | piano lesson |
schedule | User has a dentist appointment at 9 and no other plans. | dentist appointment | plan
schedule | The party is on Saturday, no gifts please. | party | gift
schedule | User bought a gift for the party. | gift party |
schedule | User is free on Friday evening. | |
schedule | User does not have time for a call today. | | time call
schedule | User has a flight on Monday and a meeting on Tuesday. | flight meeting |
schedule | No alarm on weekends. | | alarm
schedule | User's gym class was cancelled. |  | gym class
schedule | The dinner reservation is at 8, not 7. | dinner reservation |
schedule | User never makes reservations. | | reservation
schedule | User has a haircut on Thursday. | haircut |
schedule | Yoga class is every Monday; no class in August. | yoga class |
schedule | User wants no meetings before noon. | | meeting
schedule | The school has no classes on Monday. | school | class
schedule | User has tickets for the game but no parking pass. | ticket game | parking pass
schedule | The concert is sold out; the user has no ticket. | concert | ticket
schedule | User takes the train at 7 every morning. | train |
schedule | User is not going to the wedding. | | wedding
schedule | User is going to the wedding with a plus one. | wedding |
schedule | The football practice is on Tuesdays; there is no practice in winter. | football practice |
schedule | User has no holiday plans. | | holiday plan
schedule | User's holiday is in August: a trip to Greece. | holiday trip |
tech | User's laptop runs Linux, not macOS. | laptop linux | macos
tech | User has no backup of the photos. | | backup photo
tech | User backs up photos to a NAS every night. | photo nas |
tech | User's router has no password. | router | password
tech | User uses a password manager. | password manager |
tech | User has no printer. | | printer
tech | User's phone has no SIM card. | phone | sim card
tech | User doesn't use Facebook or Instagram. | | facebook instagram
tech | User posts on Instagram daily. | instagram |
tech | User never uses dark mode. | | mode
tech | User prefers dark mode in every app. | mode app |
tech | User's laptop has no USB ports, only USB-C. | laptop | port
tech | User has a mouse but no keyboard for the tablet. | mouse tablet | keyboard
tech | User uses a mechanical keyboard and a trackball. | keyboard trackball |
tech | The TV has no HDMI cable. | tv | cable
tech | User's smartwatch has no GPS. | smartwatch | gps
tech | User's car has GPS and Bluetooth. | car gps bluetooth |
tech | User has two-factor authentication on email, not on the bank account. | authentication email | bank account
tech | User does not have a GitHub account. | | github account
tech | User keeps the code on GitHub. | code github |
tech | User's server has no GPU. | server | gpu
tech | User uses a GPU in the cloud. | gpu cloud |
tech | No antivirus on the Mac. | mac | antivirus
tech | User has headphones but no speakers. | headphone | speaker
tech | User uses earbuds without noise cancelling. | earbud | noise
tech | The WiFi in the study has no signal. | wifi study | signal
tech | User's printer is out of ink. | printer ink |
tech | User wants a laptop with a good battery and no fan. | laptop battery | fan
tech | User has a Kindle and an iPad. | kindle ipad |
tech | User doesn't read on the Kindle anymore. | | kindle
tech | User's camera has no memory card. | camera | card
tech | User edits video on a desktop, not a laptop. | video desktop | laptop
tech | User has no smart gadgets. | | gadget
tech | User installed a doorbell camera. | doorbell camera |
tech | User never upgrades the firmware. | | firmware
tech | The backup drive is full. | backup drive |
tech | User has Netflix but not Disney+. | netflix | disney
tech | User cancelled the Netflix subscription. |  | netflix subscription
tech | User has no streaming subscription. | | subscription
correction | Correction: the user has a cat, not a dog. | cat | dog
correction | Correction: the meeting is on Thursday, not Friday. | meeting |
correction | Earlier note was wrong: the user does drink coffee. | note coffee |
correction | Update: the user no longer has a car. | update | car
correction | Correction: Alice is allergic to cashews, not peanuts. | peanut | cashew
correction | Not a dentist appointment but a doctor appointment. | appointment | dentist
correction | The user never said they had a bike; they have a scooter. | scooter | bike
correction | Correction: the hotel does have parking. | hotel parking |
correction | Update: the user now eats meat again. | update meat |
correction | Correction: the user's phone is an iPhone, not an Android. | phone iphone | android
correction | Update: no more piano lessons. | update | piano lesson
correction | Correction: the allergy is to shrimp, not to fish. | allergy fish | shrimp
correction | Correction: the user does not have asthma. | | asthma
correction | The user is not moving in June after all. | |
correction | The earlier note about the garden was wrong; there is no garden. | note | garden
correction | Update: the user bought a dishwasher. | update dishwasher |
correction | Correction: the flight leaves from Terminal 2, not Terminal 1. | flight terminal |
correction | Update: the dog passed away; the user has no pets now. | update dog | pet
correction | Update: the user started taking insulin. | update insulin |
shopping | Grocery list: eggs, bread, butter, no milk. | egg bread butter | milk
shopping | Shopping list: apples, rice, coffee. | apple rice coffee |
shopping | Don't buy bananas; there are plenty at home. | home | banana
shopping | User needs new shoes but no new boots. | shoe | boot
shopping | User bought shoes and a coat. | shoe coat |
shopping | User wants a phone case without glitter. | phone case | glitter
shopping | User is looking for a backpack with no leather. | backpack | leather
shopping | User prefers cotton shirts, never polyester. | cotton shirt | polyester
shopping | Gift ideas for Mum: flowers or a book, no perfume. | gift idea flower book | perfume
shopping | User buys books only in paperback, not hardcover. | book paperback | hardcover
shopping | User's Amazon parcel had no receipt. | parcel | receipt
shopping | Returned the jacket; kept the scarf. | jacket scarf |
shopping | User never buys clothes online. | | clothes
shopping | User bought a bike helmet online. | bike helmet |
shopping | No plastic bags; the user brings a tote. | tote | bag
shopping | User wants a mattress without springs. | mattress | spring
shopping | User wants a car without a sunroof. | car | sunroof
shopping | The new laptop came without a charger. | laptop | charger
shopping | The charger is included with the phone. | charger phone |
shopping | Packed for the picnic: sandwiches, fruit, no lemonade. | picnic sandwich fruit | lemonade
shopping | Packed for the beach: towel, sunscreen, no umbrella. | beach towel sunscreen | umbrella
shopping | User brought an umbrella and a raincoat. | umbrella raincoat |
shopping | User has no gift card for the store. | store | gift card
shopping | User buys wine from the local shop. | wine shop |
social | User doesn't like parties; prefers small dinners. | dinner | party
social | User loves parties and karaoke. | party karaoke |
social | User never drinks alcohol at parties. | party | alcohol
social | User's sister has no children. |  |  | child
social | User plays chess, not poker. | chess | poker
social | User plays poker on Fridays. | poker |
social | User is in a book club and a choir. | book club choir |
social | User quit the choir. |  | choir
social | User has no Twitter account. | | twitter account
social | User doesn't celebrate birthdays. | | birthday
social | User's birthday is in June; no surprise party. | birthday | surprise party
social | User likes board games but not video games. | board game | video
social | User follows football but doesn't play it. | football |
social | User has no siblings. | | sibling
social | User volunteers at the animal shelter. | animal shelter |
social | User likes jazz and classical music, not rap. | jazz music | rap
social | User listens to podcasts rather than audiobooks. | podcast | audiobook
social | User has no subscription to the gym anymore. | gym | subscription
hobby | User grows tomatoes but no potatoes. | tomato | potato
hobby | User paints with watercolor, never oil. | watercolor | oil
hobby | User knits socks and hats. | sock hat |
hobby | User goes fishing but never hunting. | fishing | hunting
hobby | User has a telescope and no camera. | telescope | camera
hobby | User plays guitar and piano. | guitar piano |
hobby | User doesn't play any instrument. | | instrument
hobby | User bakes bread every weekend without yeast. | bread | yeast
hobby | User does puzzles, crosswords and sudoku. | puzzle crossword sudoku |
hobby | User no longer collects stamps. | | stamp
hobby | User collects coins, not stamps. | coin | stamp
hobby | User reads novels, not poetry. | novel | poetry
hobby | User hikes only on trails with no snow. | trail | snow
hobby | User goes skiing every winter. | skiing |
hobby | User doesn't ski; snowboarding only. | snowboarding |
hobby | User has a kayak but no paddle. | kayak | paddle
hobby | User bought a paddle and a life jacket. | paddle jacket |
hobby | User runs without music. | | music
hobby | User does not cook; orders takeout. | takeout |
hobby | User cooks curry and pasta on Sundays. | curry pasta |
money | User has no credit card, only a debit card. | debit card | credit
money | User pays rent by bank transfer. | rent bank transfer |
money | User has no mortgage. | | mortgage
money | User has a mortgage and a car loan. | mortgage car loan |
money | User doesn't have a savings account. | | savings account
money | User has no debt. | | debt
money | User pays no fee for the account. | account | fee
money | User never uses cash. | | cash
money | User carries cash and a debit card. | cash debit card |
money | User has no vacation planned this year; the budget is tight. | budget | vacation
money | User has a pension plan but no stocks. | pension plan | stock
money | User's tax return has no errors. | tax return | error
travel | The hotel has a gym and free parking. | hotel gym parking |
travel | User picked a hotel with a gym and a rooftop bar. | hotel gym bar |
travel | The hotel near the station has parking but no breakfast. | hotel station parking | breakfast
home | User's garden has an apple tree and a pond. | garden apple tree pond |
home | The cottage has a big garden and no garage. | cottage garden | garage
food | User had a Greek salad with feta. | salad feta |
food | User orders salad with onions and olives. | salad onion olive |
food | User enjoys wine with dinner. | wine dinner |
food | User keeps cheese and crackers for guests. | cheese cracker |
work | The budget for the offsite is approved; no bonus this year. | budget offsite | bonus
work | The printer in the hallway works again. | printer hallway |
tech | User has a bank account with no monthly fee. | bank account | fee
money | User opened a savings account. | savings account |
home | User borrowed tools from the neighbour. | tool |
home | The tools are in the garage. | tool garage |
# Issue 52: notes written for the state convention (README.md): past habits, preferences against,
# hedges, another person's facts, pseudo-negations, where a scope ends, "free", names.
food | Maya gave up coffee in May. | | coffee
food | Omar stopped drinking soda last year. | | soda
food | Priya quit sugar in her tea. | tea | sugar
food | Leo used to eat meat every day. | | meat
food | Nina no longer buys frozen pizza. | | pizza
food | Sam cancelled the wine club delivery. | | wine club delivery
food | Leo is allergic to sesame. | | sesame
food | Maya avoids dairy at dinner. | dinner | dairy
food | Omar can't stand cilantro in salsa. | salsa | cilantro
food | Priya dislikes mushrooms. | | mushroom
food | Nina isn't keen on spicy noodles. | | noodle
food | Sam isn't fond of olives. | | olive
food | Leo prefers tea over coffee. | tea | coffee
food | Maya prefers rice to noodles. | rice | noodle
food | Omar might try the vegan burger. |  |  | burger
food | Priya is not sure whether she likes kimchi. |  |  | kimchi
food | Leo never skips his morning porridge. | porridge |
food | No doubt Maya loves dumplings. | dumpling |
food | Sam eats gluten-free bread. | bread | gluten
food | The bakery sells sugar-free cookies. | bakery cookie | sugar
food | Nina's brother has a peanut allergy. |  |  | peanut allergy
food | Omar's wife is vegan and never eats cheese. |  |  | cheese
food | Maya gets takeout on Fridays but no dessert. | takeout | dessert
food | Leo drinks no coffee until noon. |  | coffee
health | Maya stopped taking ibuprofen. | | ibuprofen
health | Omar quit vaping in March. | | vaping
health | Leo gave up running after the knee surgery. | knee surgery | running
health | Priya used to buy cigarettes every week. | | cigarette
health | Sam no longer needs an inhaler. | | inhaler
health | Nina is allergic to latex gloves. | | latex glove
health | Omar might need physiotherapy. |  |  | physiotherapy
health | Maya is considering a standing desk. |  |  | desk
health | No running until the ankle heals. | ankle | running
health | No sugar because of the diabetes. | diabetes | sugar
health | Leo is symptom-free since the new medication. | medication | symptom
health | Priya felt free at last after the exam. | exam |
health | Omar's mother has asthma. |  |  | asthma
health | Sam never misses his physio session. | physio session |
travel | Maya cancelled the trip to Lisbon. | | trip
travel | Omar avoids red-eye flights. | | flight
travel | Leo prefers the train over the bus. | train | bus
travel | Priya might hire a car in Spain. |  |  | car
travel | Nina is thinking about a cruise. |  |  | cruise
travel | Sam's sister has a timeshare in Spain. |  |  | timeshare
travel | Not sure whether Omar booked the hotel. |  |  | hotel
travel | Leo travels without luggage except a backpack. | backpack | luggage
work | Omar maintains the Atlas service on Kubernetes. | atlas service kubernetes |
work | Priya designs the UI in Figma and writes some Rust. | ui figma rust |
work | Jo reviews the AI roadmap every quarter. | ai roadmap |
work | Leo stopped using Slack for standups. | standup | slack
work | Nina no longer attends the Monday sync. | | sync
work | Sam is not fond of open offices. | | office
work | The laptop does not run macOS, only Linux. | laptop linux | macos
work | Maya went to a free workshop on Tuesday. | workshop |
work | Omar has free time on Thursdays. | time |
work | Priya's boss has a Tesla. |  |  | tesla
home | Maya used to have a cat. | | cat
home | Omar gave up the allotment in April. | | allotment
home | Leo cancelled the cable subscription. | | cable subscription
home | Nina might get a dog. |  |  | dog
home | Sam's neighbour has a pool. |  |  | pool
home | Priya's kids have a trampoline. |  |  | trampoline
home | The cottage is pet-free. | cottage | pet
hobby | Maya watched the whole series on Netflix. | series netflix |
hobby | Omar quit the chess club. | | chess club
hobby | Leo used to play guitar. | | guitar
hobby | Priya never skips her yoga class. | yoga class |
hobby | Nina is considering pottery lessons. |  |  | pottery lesson
hobby | Not only painting but also sculpture interests Sam. | painting sculpture |
""".strip()

# The nouns each query must be about (required) and the nouns it excludes (forbidden).
QUERIES = """
which drinks does the user like other than coffee | tea | coffee
hotels without a pool | hotel | pool
what snacks are there with no peanuts | snack | peanut
which meetings are not at lunch | meeting | lunch
a hotel with a gym but no sauna | hotel gym | sauna
breakfast without sugar | breakfast | sugar
tea without milk | tea | milk
coffee with no sugar | coffee | sugar
pets other than dogs | cat | dog
a cat but not a dog | cat | dog
a dog and no cat | dog | cat
homes with a garden but no garage | garden | garage
which apartments have no elevator | apartment | elevator
a house without an alarm system | house | alarm
laptops without a charger | laptop | charger
a laptop that does not run macos | laptop | macos
phones that are not iPhones | phone | iphone
which hotels have parking and no breakfast | hotel parking | breakfast
a train trip without a car | train | car
dinner with no dessert | dinner | dessert
pizza without mushrooms | pizza | mushroom
pizza but no pineapple | pizza | pineapple
a salad with no onions | salad | onion
food with fish but no shellfish | fish | shellfish
bread without seeds | bread | seed
chocolate that is not milk chocolate | chocolate | milk
wine but not beer | wine | beer
fruit except bananas | fruit | banana
eggs but not bacon | egg | bacon
rice without bread | rice | bread
pasta not bread | pasta | bread
cheese but no yogurt | cheese | yogurt
the gym but not the pool | gym | pool
an office without dogs | office | dog
a kitchen with no microwave | kitchen | microwave
a room without a desk | room | desk
a car without gps | car | gps
a passport but no visa | passport | visa
a flight with no layover | flight | layover
a meeting but no agenda | meeting | agenda
email rather than a call | email | call
a budget with no bonus | budget | bonus
a conference without a fee | conference | fee
a camera but no memory card | camera | card
a printer without toner | printer | toner
an account with no fee | account | fee
a bike without a helmet | bike | helmet
a pool without a tub | pool | tub
tools not in the garage | tool | garage
a party with no alcohol | party | alcohol
""".strip()


def forms(noun: str) -> set[str]:
    """Word forms of a label noun as they may appear in a note (for the consistency checks)."""
    out = {noun, noun + "s"}
    if noun.endswith(("s", "x", "z", "ch", "sh", "o")):
        out.add(noun + "es")
    if noun.endswith("y"):
        out.add(noun[:-1] + "ies")
    out |= {"child": {"children"}}.get(noun, set())
    return out


def split_of(text: str) -> str:
    return "dev" if int(hashlib.sha256(text.encode()).hexdigest(), 16) % 2 == 0 else "heldout"


def build() -> tuple[list[dict], list[dict]]:
    notes = []
    for i, line in enumerate([line for line in NOTES.splitlines() if not line.startswith("#")], 1):
        category, text, affirmed, negated, *unstated = [part.strip() for part in line.split("|")]
        notes.append(
            {
                "id": f"note-{i:03d}",
                "text": text,
                "affirmed": affirmed.split(),
                "negated": negated.split(),
                "unstated": " ".join(unstated).split(),
                "category": category,
                "split": split_of(text),
            }
        )
    vocabulary = {n for note in notes for n in note["affirmed"] + note["negated"] + note["unstated"]}
    problems = []
    for note in notes:
        words = set(re.findall(r"[a-z0-9]+", note["text"].lower().replace("’", "'")))
        labelled = note["affirmed"] + note["negated"] + note["unstated"]
        if len(set(labelled)) != len(labelled):
            problems.append(f"{note['id']}: a noun in both lists or twice: {labelled}")
        for noun in labelled:
            if not forms(noun) & words:
                problems.append(f"{note['id']}: {noun!r} is not in the text: {note['text']}")
        for noun in vocabulary - set(labelled):  # every set noun the note says is labelled in it
            if forms(noun) & words:
                problems.append(f"{note['id']}: {noun!r} is in the text but not labelled: {note['text']}")
    queries = []
    for i, line in enumerate(QUERIES.splitlines(), 1):
        query, required, forbidden = [part.strip() for part in line.split("|")]
        q = {
            "id": f"query-{i:02d}",
            "query": query,
            "required": required.split(),
            "forbidden": forbidden.split(),
            "split": split_of(query),
        }
        for noun in q["required"] + q["forbidden"]:
            if noun not in vocabulary:
                problems.append(f"{q['id']}: {noun!r} is no labelled noun")
        relevant = [n for n in notes if set(q["required"]) <= set(n["affirmed"])]
        if len(relevant) < 3:
            problems.append(f"{q['id']}: {len(relevant)} notes affirm {q['required']}")
        queries.append(q)
    if problems:
        raise SystemExit("\n".join(problems))
    return notes, queries


def main() -> None:
    notes, queries = build()
    with open(HERE / "notes.jsonl", "w") as f:
        for note in notes:
            f.write(json.dumps(note) + "\n")
    with open(HERE / "queries.jsonl", "w") as f:
        for q in queries:
            f.write(json.dumps(q) + "\n")
    pairs = [(n["split"], p) for n in notes for p in ["a"] * len(n["affirmed"]) + ["n"] * len(n["negated"])]
    print(
        f"{len(notes)} notes ({Counter(n['split'] for n in notes)}), {len(pairs)} pairs, "
        f"{sum(len(n['unstated']) for n in notes)} unstated, "
        f"{sum(p == 'n' for _, p in pairs)} negated, {len(queries)} queries ({Counter(q['split'] for q in queries)}), "
        f"{len({x for n in notes for x in n['affirmed'] + n['negated']})} nouns"
    )
    print(Counter(n["category"] for n in notes))


if __name__ == "__main__":
    main()
